//! A table's rows read straight from the file's b-tree pages, the SQLite file format
//! (<https://sqlite.org/fileformat2.html>) decoded by hand: an ordinary table is a b-tree of
//! pages whose leaves hold the rows in rowid order, each a record of typed values.
//!
//! Why: SQLite's statement VM spends ~190 ns a row to hand over a few integers; decoding
//! the record where it lies costs a tenth of that, and the big tables hold tens of millions
//! of rows. Only what nsys writes is read this way — UTF-8, a rollback journal, ordinary
//! rowid tables, columns without defaults — and anything else is left to SQLite
//! (`Layout::of` says `None`). A page that does not parse is an error naming the file as
//! damaged, as SQLite's would; the file is opened read-only and never written.

use std::fs::File;
use std::path::Path;

use rusqlite::Connection;

/// Pages read by one `pread` where the leaves lie one after another (as a written-once
/// export's do).
const PAGES_PER_READ: usize = 64;

/// Why a page could not be read.
#[derive(Debug)]
pub enum PageError {
    Io(std::io::Error),
    /// The page does not parse: a damaged file.
    Damaged(String),
}

impl From<std::io::Error> for PageError {
    fn from(e: std::io::Error) -> Self {
        PageError::Io(e)
    }
}

fn damaged<T>(what: impl Into<String>) -> Result<T, PageError> {
    Err(PageError::Damaged(what.into()))
}

/// The database file, read by page number.
/// SQLite's largest string or blob (`SQLITE_MAX_LENGTH`'s default): no record is longer.
const MAX_RECORD_BYTES: u64 = 1_000_000_000;

pub struct DbFile {
    file: File,
    page_size: usize,
    /// Bytes of a page that hold b-tree content (the page less its reserved tail).
    usable: usize,
    pages: u32,
}

impl DbFile {
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Opens `path` for page reads; `None` when its header asks for something this reader
    /// leaves to SQLite (another text encoding, a WAL-mode file, an odd page size).
    pub fn open(path: &Path) -> std::io::Result<Option<DbFile>> {
        let file = File::open(path)?;
        let mut header = [0u8; 100];
        if read_at(&file, &mut header, 0).is_err() || &header[..16] != b"SQLite format 3\0" {
            return Ok(None);
        }
        let page_size = match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65536,
            n => n as usize,
        };
        let reserved = header[20] as usize;
        let utf8 = u32::from_be_bytes([header[56], header[57], header[58], header[59]]) == 1;
        // 1 = rollback journal (as nsys writes), 2 = WAL, whose newer pages live elsewhere.
        let journal = header[18] == 1 && header[19] == 1;
        if !page_size.is_power_of_two()
            || !(512..=65536).contains(&page_size)
            || page_size - reserved < 480
            || !utf8
            || !journal
        {
            return Ok(None);
        }
        let len = file.metadata()?.len();
        let pages = (len / page_size as u64).min(u32::MAX as u64) as u32;
        Ok(Some(DbFile {
            file,
            page_size,
            usable: page_size - reserved,
            pages,
        }))
    }

    fn offset(&self, page: u32) -> Result<u64, PageError> {
        if page == 0 || page > self.pages {
            return damaged(format!("page {page} is beyond the file's {}", self.pages));
        }
        Ok((page as u64 - 1) * self.page_size as u64)
    }

    fn read_page(&self, page: u32, buf: &mut Vec<u8>) -> Result<(), PageError> {
        buf.resize(self.page_size, 0);
        read_at(&self.file, buf, self.offset(page)?)?;
        Ok(())
    }

    /// The leaf pages of the table b-tree whose root is `root`, in rowid order. Reads the
    /// interior pages only (a few hundredths of the table): every leaf lies at one depth,
    /// so the children of the last interior level are the leaves.
    pub fn leaves(&self, root: u32) -> Result<Vec<u32>, PageError> {
        let mut buf = Vec::new();
        // The tree's height, down its left-most path.
        let mut depth = 0;
        let mut page = root;
        loop {
            self.read_page(page, &mut buf)?;
            let node = Node::parse(&buf, page, self.usable)?;
            match node.kind {
                LEAF => break,
                INTERIOR if depth < 64 => {
                    page = match node.cells {
                        0 => node.right_most,
                        _ => child(&buf, page, node.cell_at(&buf, 0)?)?,
                    };
                    depth += 1;
                }
                _ => return damaged(format!("page {page} is not a table b-tree page")),
            }
        }
        // Interior pages level by level, each level's children in order.
        let mut level = vec![root];
        for _ in 0..depth {
            let mut next = Vec::with_capacity(level.len() * 64);
            for &page in &level {
                self.read_page(page, &mut buf)?;
                let node = Node::parse(&buf, page, self.usable)?;
                if node.kind != INTERIOR {
                    return damaged(format!("page {page} is not an interior page"));
                }
                for i in 0..node.cells {
                    next.push(child(&buf, page, node.cell_at(&buf, i)?)?);
                }
                next.push(node.right_most);
                if next.len() > self.pages as usize {
                    return damaged("the table claims more pages than the file holds");
                }
            }
            level = next;
        }
        Ok(level)
    }

    /// Hands every row of `leaves` (consecutive leaves of one table) to `on_row`, with the
    /// values `layout` picks.
    pub fn scan<E: From<PageError>>(
        &self,
        leaves: &[u32],
        layout: &Layout,
        mut on_row: impl FnMut(&Record) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut block = Vec::new();
        let mut overflow = Vec::new();
        let mut slots = vec![Slot::NULL; layout.sources.len()];
        let mut i = 0;
        while i < leaves.len() {
            // A run of leaves that follow each other in the file: one read.
            let mut n = 1;
            while i + n < leaves.len()
                && n < PAGES_PER_READ
                && leaves[i + n] == leaves[i + n - 1].wrapping_add(1)
            {
                n += 1;
            }
            block.resize(n * self.page_size, 0);
            self.offset(leaves[i + n - 1])?;
            read_at(&self.file, &mut block, self.offset(leaves[i])?).map_err(PageError::Io)?;
            for (k, page) in block.chunks_exact(self.page_size).enumerate() {
                let number = leaves[i + k];
                let node = Node::parse(page, number, self.usable)?;
                if node.kind != LEAF {
                    return Err(PageError::Damaged(format!("page {number} is not a leaf")).into());
                }
                for c in 0..node.cells {
                    let at = node.cell_at(page, c)?;
                    let (payload, rowid) = self.cell_payload(page, number, at, &mut overflow)?;
                    let header = layout
                        .pick(payload, &mut slots)
                        .ok_or_else(|| bad_cell(number))?;
                    on_row(&Record {
                        payload,
                        rowid,
                        slots: &slots,
                        header,
                    })?;
                }
            }
            i += n;
        }
        Ok(())
    }

    /// The record of the leaf cell at `at` and its rowid; a record that spills onto
    /// overflow pages is put together in `overflow`.
    fn cell_payload<'a>(
        &self,
        page: &'a [u8],
        number: u32,
        at: usize,
        overflow: &'a mut Vec<u8>,
    ) -> Result<(&'a [u8], i64), PageError> {
        let (size, n) = varint(page, at).ok_or_else(|| bad_cell(number))?;
        let (rowid, m) = varint(page, at + n).ok_or_else(|| bad_cell(number))?;
        let start = at + n + m;
        // A record is at most SQLite's largest value and no larger than the file: a
        // declared size past either is damage, found before any overflow page is read.
        if size > MAX_RECORD_BYTES.min(self.pages as u64 * self.usable as u64) {
            return damaged(format!("a record of page {number} declares {size} bytes"));
        }
        let size = size as usize;
        let local = self.local_payload(size);
        let local_bytes = page
            .get(start..start + local)
            .ok_or_else(|| bad_cell(number))?;
        if local == size {
            return Ok((local_bytes, rowid as i64));
        }
        let next = page
            .get(start + local..start + local + 4)
            .ok_or_else(|| bad_cell(number))?;
        overflow.clear();
        overflow.extend_from_slice(local_bytes);
        let mut next = u32::from_be_bytes(next.try_into().expect("4 bytes"));
        let mut buf = Vec::new();
        // A chain longer than the file has pages loops.
        let mut hops = 0u32;
        while overflow.len() < size {
            hops += 1;
            if next == 0 || hops > self.pages {
                return damaged(format!("a record of page {number} lacks its overflow"));
            }
            self.read_page(next, &mut buf)?;
            let take = (size - overflow.len()).min(self.usable - 4);
            overflow.extend_from_slice(&buf[4..4 + take]);
            next = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes"));
        }
        Ok((overflow.as_slice(), rowid as i64))
    }

    /// How much of a `size`-byte record a table leaf holds on the page itself.
    fn local_payload(&self, size: usize) -> usize {
        let u = self.usable;
        let max_local = u - 35;
        if size <= max_local {
            return size;
        }
        let min_local = (u - 12) * 32 / 255 - 23;
        let k = min_local + (size - min_local) % (u - 4);
        if k <= max_local { k } else { min_local }
    }
}

/// The left child page of the interior cell at `at`.
fn child(page: &[u8], number: u32, at: usize) -> Result<u32, PageError> {
    let bytes = page.get(at..at + 4).ok_or_else(|| bad_cell(number))?;
    Ok(u32::from_be_bytes(bytes.try_into().expect("4 bytes")))
}

fn bad_cell(page: u32) -> PageError {
    PageError::Damaged(format!("a cell of page {page} runs off the page"))
}

const INTERIOR: u8 = 0x05;
const LEAF: u8 = 0x0D;

/// A b-tree page's header.
struct Node {
    kind: u8,
    cells: usize,
    right_most: u32,
    /// Where the cell pointer array starts.
    pointers: usize,
    usable: usize,
}

impl Node {
    fn parse(page: &[u8], number: u32, usable: usize) -> Result<Node, PageError> {
        // Page 1 starts with the file's 100-byte header.
        let at = if number == 1 { 100 } else { 0 };
        let header = page.get(at..at + 12).ok_or_else(|| bad_cell(number))?;
        let kind = header[0];
        let cells = u16::from_be_bytes([header[3], header[4]]) as usize;
        let (right_most, size) = match kind {
            INTERIOR => (u32::from_be_bytes(header[8..12].try_into().expect("4")), 12),
            _ => (0, 8),
        };
        let pointers = at + size;
        if pointers + 2 * cells > usable {
            return damaged(format!("page {number} claims {cells} cells"));
        }
        Ok(Node {
            kind,
            cells,
            right_most,
            pointers,
            usable,
        })
    }

    fn cell_at(&self, page: &[u8], i: usize) -> Result<usize, PageError> {
        let p = self.pointers + 2 * i;
        let at = u16::from_be_bytes([page[p], page[p + 1]]) as usize;
        if at >= self.usable {
            return damaged(format!("a cell pointer ({at}) past the page's end"));
        }
        Ok(at)
    }
}

/// An SQLite varint at `at`: its value and length.
#[inline(always)]
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    // Most are one byte (every serial type of a small value).
    let first = *b.get(at)?;
    if first < 0x80 {
        return Some((first as u64, 1));
    }
    varint_long(b, at)
}

/// [`varint`] of two bytes or more (a rowid, a record's size, a long text's type).
#[inline(never)]
fn varint_long(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = *b.get(at + i)?;
        if i == 8 {
            return Some(((v << 8) | byte as u64, 9));
        }
        v = (v << 7) | (byte & 0x7f) as u64;
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Where a wanted value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The record's column at this position.
    Column(usize),
    /// The same, found only when asked for.
    OnDemand(usize),
    Rowid,
    Null,
}

/// The serial type and body offset of one picked value.
#[derive(Clone, Copy)]
struct Slot {
    serial: u64,
    offset: usize,
}

impl Slot {
    const NULL: Slot = Slot {
        serial: 0,
        offset: 0,
    };
}

/// A table as this reader reads it: its root page and where each wanted value lies.
pub struct Layout {
    pub root: u32,
    pub sources: Vec<Source>,
    /// (record column, value position) of the values read from the record, by column.
    picks: Vec<(usize, usize)>,
}

impl Layout {
    /// The layout of `table` for the `wanted` names (`"rowid"`, a column, or anything
    /// else for NULL), or `None` when this reader leaves the table to SQLite. Columns named
    /// in `on_demand` are found in a record only when asked for (a column far to the right
    /// that few rows need: the record header is parsed that far only for them).
    pub fn of(
        conn: &Connection,
        table: &str,
        wanted: &[&str],
        on_demand: &[&str],
    ) -> Option<Layout> {
        let (root, sql): (u32, String) = conn
            .query_row(
                "SELECT rootpage, sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    ))
                },
            )
            .ok()?;
        if root == 0 || sql.to_ascii_uppercase().contains("WITHOUT ROWID") {
            return None;
        }
        // (name, declared type, default, part of the primary key), in record order.
        let mut stmt = conn
            .prepare(&format!("PRAGMA table_xinfo(\"{table}\")"))
            .ok()?;
        let columns: Vec<(String, String, Option<String>, i64, i64)> = stmt
            .query_map([], |r| {
                Ok((r.get(1)?, r.get(2)?, r.get(4)?, r.get(5)?, r.get(6)?))
            })
            .ok()?
            .collect::<Result<_, _>>()
            .ok()?;
        // Generated (hidden) columns are not in the record the way table_info lists them.
        if columns.iter().any(|c| c.4 != 0) {
            return None;
        }
        let primary: Vec<&(String, String, Option<String>, i64, i64)> =
            columns.iter().filter(|c| c.3 > 0).collect();
        // `INTEGER PRIMARY KEY` is the rowid; its record slot holds NULL.
        let rowid_alias = match primary.as_slice() {
            [c] if c.1.eq_ignore_ascii_case("INTEGER") => Some(c.0.as_str()),
            _ => None,
        };
        let mut sources = Vec::with_capacity(wanted.len());
        for &name in wanted {
            let source = if name == "rowid" || Some(name) == rowid_alias {
                Source::Rowid
            } else if let Some(i) = columns.iter().position(|c| c.0 == name) {
                let lazy = on_demand.contains(&name);
                // A column added later with a default: older records lack it and read as
                // the default, which SQLite knows and this reader does not.
                if columns[i].2.as_deref().is_some_and(|d| d != "NULL") {
                    return None;
                }
                if lazy {
                    Source::OnDemand(i)
                } else {
                    Source::Column(i)
                }
            } else {
                Source::Null
            };
            sources.push(source);
        }
        let mut picks: Vec<(usize, usize)> = sources
            .iter()
            .enumerate()
            .filter_map(|(slot, s)| match s {
                Source::Column(c) => Some((*c, slot)),
                _ => None,
            })
            .collect();
        picks.sort_unstable();
        Some(Layout {
            root,
            sources,
            picks,
        })
    }

    /// Finds each wanted value in `payload` (those on demand: where to go on looking);
    /// `None` when the record does not parse.
    fn pick(&self, payload: &[u8], slots: &mut [Slot]) -> Option<Header> {
        for (slot, source) in slots.iter_mut().zip(&self.sources) {
            *slot = match *source {
                Source::Rowid => Slot {
                    serial: ROWID,
                    offset: 0,
                },
                Source::OnDemand(column) => Slot {
                    serial: ON_DEMAND,
                    offset: column,
                },
                // Columns past the record's end (added after it was written) are NULL.
                _ => Slot::NULL,
            };
        }
        let (len, at) = varint(payload, 0)?;
        let mut header = Header {
            len: usize::try_from(len).ok()?,
            at,
            offset: usize::try_from(len).ok()?,
            column: 0,
        };
        if header.len > payload.len() {
            return None;
        }
        // The header's serial types in column order, up to the last wanted column.
        let mut next = 0;
        while next < self.picks.len() && header.at < header.len {
            let serial = header.next(payload)?;
            while let Some(&(c, slot)) = self.picks.get(next)
                && c == header.column - 1
            {
                slots[slot] = Slot {
                    serial,
                    offset: header.offset - body_size(serial),
                };
                next += 1;
            }
        }
        // The values read lie inside the record.
        (header.offset <= payload.len()).then_some(header)
    }
}

/// Where a record's header parse stands: its length, the next serial type's position,
/// the body offset and column that serial type describes.
#[derive(Clone, Copy)]
struct Header {
    len: usize,
    at: usize,
    offset: usize,
    column: usize,
}

impl Header {
    /// The next column's serial type; moves past it.
    #[inline]
    fn next(&mut self, payload: &[u8]) -> Option<u64> {
        let (serial, m) = varint(payload, self.at)?;
        self.at += m;
        self.offset = self.offset.saturating_add(body_size(serial));
        self.column += 1;
        Some(serial)
    }
}

/// Serial types no record uses (10 and 11 are reserved): the rowid, and a column found
/// when asked for (its slot's offset is the column).
const ROWID: u64 = 10;
const ON_DEMAND: u64 = 11;

/// Bytes of a value of serial type `serial` in the record's body.
#[inline]
fn body_size(serial: u64) -> usize {
    const FIXED: [u8; 12] = [0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0];
    match serial {
        0..12 => FIXED[serial as usize] as usize,
        n => usize::try_from((n - 12) / 2).unwrap_or(usize::MAX),
    }
}

/// One row, its wanted values picked.
pub struct Record<'a> {
    payload: &'a [u8],
    rowid: i64,
    slots: &'a [Slot],
    /// Where the parse of its header stopped.
    header: Header,
}

impl Record<'_> {
    /// Value `i`'s serial type and offset (a value on demand found now).
    #[inline]
    fn slot(&self, i: usize) -> Option<Slot> {
        let slot = *self.slots.get(i)?;
        if slot.serial != ON_DEMAND {
            return Some(slot);
        }
        let mut header = self.header;
        while header.at < header.len {
            let serial = header.next(self.payload)?;
            if header.column - 1 == slot.offset {
                let offset = header.offset - body_size(serial);
                return Some(Slot { serial, offset });
            }
        }
        Some(Slot::NULL)
    }

    fn bytes(&self, slot: Slot) -> Option<&[u8]> {
        let end = slot.offset.checked_add(body_size(slot.serial))?;
        self.payload.get(slot.offset..end)
    }

    /// Value `i` as an integer (a real truncated, as `sqlite3_column_int64` does); NULL,
    /// text and blobs as `None`.
    #[inline]
    pub fn int(&self, i: usize) -> Option<i64> {
        let slot = self.slot(i)?;
        // A big-endian two's-complement integer of N bytes, sign-extended.
        fn be<const N: usize>(p: &[u8], at: usize) -> Option<i64> {
            let b: [u8; N] = p.get(at..at + N)?.try_into().ok()?;
            let mut wide = [if b[0] & 0x80 != 0 { 0xff } else { 0 }; 8];
            wide[8 - N..].copy_from_slice(&b);
            Some(i64::from_be_bytes(wide))
        }
        let (p, at) = (self.payload, slot.offset);
        match slot.serial {
            1 => be::<1>(p, at),
            2 => be::<2>(p, at),
            3 => be::<3>(p, at),
            4 => be::<4>(p, at),
            5 => be::<6>(p, at),
            6 => be::<8>(p, at),
            7 => be::<8>(p, at).map(|bits| f64::from_bits(bits as u64) as i64),
            8 => Some(0),
            9 => Some(1),
            ROWID => Some(self.rowid),
            _ => None,
        }
    }

    /// Value `i` as text, if it is valid UTF-8 text.
    #[inline]
    pub fn text(&self, i: usize) -> Option<&str> {
        let slot = self.slot(i)?;
        if slot.serial < 13 || slot.serial % 2 == 0 {
            return None;
        }
        std::str::from_utf8(self.bytes(slot)?).ok()
    }

    /// Value `i`'s bytes if it is a blob or text.
    #[inline]
    pub fn blob(&self, i: usize) -> Option<&[u8]> {
        let slot = self.slot(i)?;
        if slot.serial < 12 {
            return None;
        }
        self.bytes(slot)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
