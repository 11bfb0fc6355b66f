//! Interned strings: every name in the trace is a `StrId` into one table, stored compactly.
//!
//! A text is kept as its *template* — the text with every run of ASCII digits taken out —
//! and the numbers that were there, as a few varint bytes. Real exports hold millions of
//! distinct NVTX texts that differ only in their numbers
//! (`aten::linear, seq = 48299, op_id = 48299, sizes = [[1, 18900, 1536], …]`): their
//! templates repeat, so each text costs ~30 bytes instead of ~130, and a template is the
//! text "with numbers as #" that marker detection and gap signatures group by, for free.
//! The split is exact both ways (runs with a leading zero or too long for a u64 are kept
//! as their digits). Lookups hash (template, numbers); no text is stored twice.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Index into [`StringTable`].
pub type StrId = u32;
/// Index of a template (a text with its numbers as `#`) in [`StringTable`].
pub type TemplateId = u32;

/// Where a number stood in a template (a byte no UTF-8 text holds).
const NUMBER: u8 = 0xFF;

/// Texts back to back, each found by its end.
#[derive(Debug, Default, Clone)]
struct Arena {
    bytes: Vec<u8>,
    /// `ends[i]`: where text `i` ends (it starts where `i - 1` ends).
    ends: Vec<u64>,
}

impl Arena {
    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    fn push(&mut self, bytes: &[u8]) -> usize {
        self.bytes.extend_from_slice(bytes);
        self.ends.push(self.bytes.len() as u64);
        self.ends.len() - 1
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 8
    }
}

/// A [`StringTable`]'s columns, as the cache writes them.
pub(crate) struct StringColumns<'a> {
    pub template_bytes: &'a [u8],
    pub template_ends: &'a [u64],
    pub template: &'a [TemplateId],
    pub number_bytes: &'a [u8],
    pub number_ends: &'a [u64],
}

#[derive(Debug, Default, Clone)]
pub struct StringTable {
    templates: Arena,
    template_index: HashTable<TemplateId>,
    /// Per template: the hash of its bytes, which a string's hash starts from, so that a
    /// string hashes the same in every table (a chunk's and the trace's).
    template_hashes: Vec<u64>,
    /// Per string: its template.
    template: Vec<TemplateId>,
    /// Per string: its numbers (varints), in `numbers`.
    numbers: Arena,
    /// Strings by (template, numbers), while strings are added: [`StringTable::freeze`]
    /// drops it once a trace is built (a fifth of the table), and `intern` builds it again
    /// if ever needed.
    index: HashTable<StrId>,
    /// Per string, while indexed: its hash. Growing the index and absorbing a chunk's
    /// table (millions of distinct NVTX texts) then hash no string again.
    hashes: Vec<u64>,
    indexed: bool,
}

fn hash_bytes(parts: &[&[u8]]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    for p in parts {
        h.write(p);
        h.write_u8(0);
    }
    h.finish()
}

/// A string's hash, from its template's and its numbers.
fn hash_entry(template_hash: u64, numbers: &[u8]) -> u64 {
    hash_bytes(&[&template_hash.to_le_bytes(), numbers])
}

/// Splits `text` into its template and its numbers' encoding.
fn split(text: &str, template: &mut Vec<u8>, numbers: &mut Vec<u8>) {
    numbers.clear();
    let bytes = text.as_bytes();
    let len = bytes.len();
    // Written in place, never longer than the text (a run of digits takes one byte or
    // stays as it is), and cut to its length at the end.
    template.clear();
    template.resize(len, 0);
    let out = &mut template[..];
    let (mut i, mut w) = (0, 0);
    while i < len {
        // The text up to the next digit, eight bytes at a time (a split reads every byte
        // of millions of NVTX texts). A word's bytes past the digit are copied too, then
        // overwritten or cut.
        while i + 8 <= len {
            let word: [u8; 8] = bytes[i..i + 8].try_into().expect("eight bytes");
            out[w..w + 8].copy_from_slice(&word);
            let digits = digit_mask(u64::from_le_bytes(word));
            let plain = (digits.trailing_zeros() / 8) as usize;
            i += plain;
            w += plain;
            if digits != 0 {
                break;
            }
        }
        while i < len && !bytes[i].is_ascii_digit() {
            out[w] = bytes[i];
            i += 1;
            w += 1;
        }
        if i == len {
            break;
        }
        let run_start = i;
        let mut value = 0u64;
        while i < len && bytes[i].is_ascii_digit() {
            value = value
                .wrapping_mul(10)
                .wrapping_add((bytes[i] - b'0') as u64);
            i += 1;
        }
        let run = &bytes[run_start..i];
        // Digits inside a word ("AllToAll4D", "c10d") are part of its name, not a number
        // that varies: kept in the template (whose text then shows them, not `#`).
        let letter = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_alphabetic);
        if run_start > 0 && letter(run_start - 1) && letter(i) {
            out[w..w + run.len()].copy_from_slice(run);
            w += run.len();
            continue;
        }
        out[w] = NUMBER;
        w += 1;
        // A value (shifted, low bit 0), or the digits themselves (length, low bit 1) where
        // the value would not give them back (it wraps past 18 digits: not used then).
        if run.len() <= 18 && (run.len() == 1 || run[0] != b'0') {
            put_varint(numbers, value << 1);
        } else {
            put_varint(numbers, ((run.len() as u64) << 1) | 1);
            numbers.extend_from_slice(run);
        }
    }
    template.truncate(w);
}

/// Per byte of `word`, its high bit set where the byte is an ASCII digit (no carry crosses
/// a byte: each sum stays under 0x100).
fn digit_mask(word: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low = word & LOW7;
    let at_least_0 = low + 0x5050_5050_5050_5050; // 0x80 - b'0'
    let past_9 = low + 0x4646_4646_4646_4646; // 0x80 - (b'9' + 1)
    at_least_0 & !past_9 & !word & HIGH
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        v |= ((b & 0x7F) as u64) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// The text of `template` with `numbers` put back.
fn join(template: &[u8], numbers: &[u8]) -> String {
    let mut out = Vec::with_capacity(template.len() + numbers.len() * 2);
    join_into(template, numbers, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`join`] appended to `out`, allocating nothing of its own (searches join millions).
fn join_into(template: &[u8], numbers: &[u8], out: &mut Vec<u8>) {
    let mut at = 0;
    let mut pieces = template.split(|&b| b == NUMBER);
    if let Some(first) = pieces.next() {
        out.extend_from_slice(first);
    }
    // Each piece after the first follows a number.
    for piece in pieces {
        let code = take_varint(numbers, &mut at);
        if code & 1 == 0 {
            let mut buf = [0u8; 20];
            out.extend_from_slice(decimal(code >> 1, &mut buf));
        } else {
            let len = (code >> 1) as usize;
            let end = (at + len).min(numbers.len());
            out.extend_from_slice(&numbers[at..end]);
            at = end;
        }
        out.extend_from_slice(piece);
    }
}

/// A run of digits in a search's query, and whether the query goes on past it on the left
/// and on the right (then the text's number must end, or begin, exactly there).
#[derive(Debug, Clone)]
pub struct DigitRun {
    digits: Vec<u8>,
    /// The run's value where a number stored as a value could equal it.
    value: Option<u64>,
    bounded_left: bool,
    bounded_right: bool,
    /// The query's text between the run before (or its start) and this one.
    before: Vec<u8>,
}

impl DigitRun {
    /// Every maximal run of digits in `query`.
    pub fn all_in(query: &[u8]) -> Vec<DigitRun> {
        let mut out = Vec::new();
        let (mut i, mut previous_end) = (0, 0);
        while i < query.len() {
            if !query[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < query.len() && query[i].is_ascii_digit() {
                i += 1;
            }
            let digits = query[start..i].to_vec();
            let as_value = digits.len() <= 18 && (digits.len() == 1 || digits[0] != b'0');
            let value =
                as_value.then(|| digits.iter().fold(0u64, |v, d| v * 10 + (d - b'0') as u64));
            out.push(DigitRun {
                digits,
                value,
                bounded_left: start > 0,
                bounded_right: i < query.len(),
                before: query[previous_end..start].to_vec(),
            });
            previous_end = i;
        }
        out
    }

    /// Whether a number with these digits can hold the run where the query has it.
    fn fits(&self, digits: &[u8]) -> bool {
        match (self.bounded_left, self.bounded_right) {
            (true, true) => digits == self.digits.as_slice(),
            (true, false) => digits.starts_with(&self.digits),
            (false, true) => digits.ends_with(&self.digits),
            (false, false) => memchr::memmem::find(digits, &self.digits).is_some(),
        }
    }

    /// [`DigitRun::fits`] for a number stored as its value, mostly without writing it out.
    fn fits_value(&self, v: u64) -> bool {
        match (self.bounded_left, self.bounded_right, self.value) {
            (true, true, Some(p)) => v == p,
            (true, true, None) => false,
            (true, false, Some(p)) => {
                let (d, l) = (decimal_len(v), self.digits.len() as u32);
                d >= l && v / 10u64.pow(d - l) == p
            }
            _ => {
                let mut buf = [0u8; 20];
                self.fits(decimal(v, &mut buf))
            }
        }
    }
}

fn decimal_len(v: u64) -> u32 {
    v.checked_ilog10().unwrap_or(0) + 1
}

/// `v` in decimal, in the end of `buf`.
fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// The strings of `hashes` in the order of their places in an index of `capacity`
/// (its slot is the hash's low bits): by the top bits of that place, counted out.
fn index_order(hashes: &[u64], capacity: usize) -> Vec<u32> {
    let buckets = (capacity.max(1) * 8 / 7).next_power_of_two() as u64;
    const GROUPS_BITS: u32 = 12;
    let shift = buckets.trailing_zeros().saturating_sub(GROUPS_BITS);
    let group = |h: u64| ((h & (buckets - 1)) >> shift) as usize;
    let mut starts = vec![0u32; (1 << GROUPS_BITS) + 1];
    for &h in hashes {
        starts[group(h) + 1] += 1;
    }
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    let mut order = vec![0u32; hashes.len()];
    for (i, &h) in hashes.iter().enumerate() {
        let slot = &mut starts[group(h)];
        order[*slot as usize] = i as u32;
        *slot += 1;
    }
    order
}

impl StringTable {
    pub fn new() -> Self {
        let mut table = Self::default();
        table.intern(""); // id 0 is the empty string: a safe default for missing names.
        table
    }

    /// Returns the id of `text`, adding it when it is new.
    pub fn intern(&mut self, text: &str) -> StrId {
        thread_local! {
            // The split's buffers, kept: a load interns tens of millions of texts.
            static SPLIT: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = Default::default();
        }
        SPLIT.with_borrow_mut(|(template, numbers)| {
            split(text, template, numbers);
            let t = self.intern_template(template);
            self.intern_parts(t, numbers)
        })
    }

    fn intern_template(&mut self, template: &[u8]) -> TemplateId {
        let hash = hash_bytes(&[template]);
        let (arena, hashes) = (&self.templates, &self.template_hashes);
        match self.template_index.entry(
            hash,
            |&t| arena.get(t as usize) == template,
            |&t| hashes[t as usize],
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let t = self.templates.len() as TemplateId;
                e.insert(t);
                self.templates.push(template);
                self.template_hashes.push(hash);
                t
            }
        }
    }

    fn intern_parts(&mut self, template: TemplateId, numbers: &[u8]) -> StrId {
        let hash = hash_entry(self.template_hashes[template as usize], numbers);
        self.intern_hashed(template, numbers, hash)
    }

    /// [`StringTable::intern_parts`] with the string's hash known: one probe of the index.
    fn intern_hashed(&mut self, template: TemplateId, numbers: &[u8], hash: u64) -> StrId {
        if !self.indexed {
            self.rebuild_index();
        }
        let Self {
            index,
            template: templates,
            numbers: arena,
            hashes,
            ..
        } = self;
        match index.entry(
            hash,
            |&id| {
                let i = id as usize;
                hashes[i] == hash && templates[i] == template && arena.get(i) == numbers
            },
            |&id| hashes[id as usize],
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let id = templates.len() as StrId;
                e.insert(id);
                templates.push(template);
                arena.push(numbers);
                hashes.push(hash);
                id
            }
        }
    }

    fn string_hash(&self, id: usize) -> u64 {
        hash_entry(
            self.template_hashes[self.template[id] as usize],
            self.numbers.get(id),
        )
    }

    fn rebuild_index(&mut self) {
        self.hashes = (0..self.len()).map(|id| self.string_hash(id)).collect();
        let hashes = &self.hashes;
        let mut index = HashTable::with_capacity(self.template.len());
        for id in 0..self.template.len() as StrId {
            index.insert_unique(hashes[id as usize], id, |&id| hashes[id as usize]);
        }
        self.index = index;
        self.indexed = true;
    }

    /// Drops what only adding strings needs and the room grown for more: the table of a
    /// built trace is only read.
    pub fn freeze(&mut self) {
        self.index = HashTable::new();
        self.hashes = Vec::new();
        self.indexed = false;
        self.template.shrink_to_fit();
        for arena in [&mut self.templates, &mut self.numbers] {
            arena.bytes.shrink_to_fit();
            arena.ends.shrink_to_fit();
        }
    }

    /// Makes room for `more` strings of `bytes` number bytes in all, so that adding them
    /// grows nothing (a growing index rehashes every string it holds).
    pub fn reserve(&mut self, more: usize, bytes: usize) {
        if !self.indexed {
            self.rebuild_index();
        }
        let hashes = &self.hashes;
        self.index.reserve(more, |&id| hashes[id as usize]);
        self.hashes.reserve(more);
        self.template.reserve(more);
        self.numbers.ends.reserve(more);
        self.numbers.bytes.reserve(bytes);
    }

    /// Strings held, and their number bytes: what absorbing this table adds at most.
    pub fn size(&self) -> (usize, usize) {
        (self.len(), self.numbers.bytes.len())
    }

    /// Adds every string of `other`; returns, per id of `other`, its id here. Templates
    /// are matched once each and numbers copied as they are: no text is put together.
    /// The index is walked in its own order, not the strings': absorbing a chunk of
    /// millions of distinct NVTX texts into an index of millions jumped through memory.
    pub fn absorb(&mut self, other: &StringTable) -> Vec<StrId> {
        let templates: Vec<TemplateId> = (0..other.templates.len())
            .map(|t| self.intern_template(other.templates.get(t)))
            .collect();
        let n = other.len();
        // Hashed alike in both tables (see `template_hashes`).
        let hashes: Cow<'_, [u64]> = if other.indexed && other.hashes.len() == n {
            Cow::Borrowed(&other.hashes)
        } else {
            Cow::Owned((0..n).map(|id| other.string_hash(id)).collect())
        };
        // Room for all first: the index does not grow while it is walked.
        self.reserve(n, other.numbers.bytes.len());
        let order = index_order(&hashes, self.index.capacity());
        let same = |table: &Self, id: StrId, i: usize| {
            let at = id as usize;
            table.hashes[at] == hashes[i]
                && table.template[at] == templates[other.template[i] as usize]
                && table.numbers.get(at) == other.numbers.get(i)
        };
        const NEW: StrId = StrId::MAX;
        let mut ids = vec![NEW; n];
        for &i in &order {
            let i = i as usize;
            if let Some(&id) = self.index.find(hashes[i], |&id| same(self, id, i)) {
                ids[i] = id;
            }
        }
        // The new strings take ids in their order (a table holds each text once).
        let first_new = self.len() as StrId;
        for (i, id) in ids.iter_mut().enumerate().filter(|(_, id)| **id == NEW) {
            *id = self.template.len() as StrId;
            self.template.push(templates[other.template[i] as usize]);
            self.numbers.push(other.numbers.get(i));
            self.hashes.push(hashes[i]);
        }
        let table_hashes = &self.hashes;
        for &i in &order {
            let (hash, id) = (hashes[i as usize], ids[i as usize]);
            if id >= first_new {
                self.index
                    .insert_unique(hash, id, |&id| table_hashes[id as usize]);
            }
        }
        ids
    }

    /// The text of `id` (empty for an unknown id). Borrowed when it holds no number.
    pub fn get(&self, id: StrId) -> Cow<'_, str> {
        let Some(&t) = self.template.get(id as usize) else {
            return Cow::Borrowed("");
        };
        let template = self.templates.get(t as usize);
        let numbers = self.numbers.get(id as usize);
        if numbers.is_empty() {
            // Only whole texts went in, and a template without numbers is one.
            Cow::Borrowed(std::str::from_utf8(template).unwrap_or(""))
        } else {
            Cow::Owned(join(template, numbers))
        }
    }

    /// The text of `id` appended to `out` as bytes (nothing for an unknown id).
    pub fn text_into(&self, id: StrId, out: &mut Vec<u8>) {
        if let Some(&t) = self.template.get(id as usize) {
            join_into(
                self.templates.get(t as usize),
                self.numbers.get(id as usize),
                out,
            );
        }
    }

    pub fn find(&self, text: &str) -> Option<StrId> {
        let (mut template, mut numbers) = (Vec::new(), Vec::new());
        split(text, &mut template, &mut numbers);
        let hash = hash_bytes(&[&template]);
        let t = *self.template_index.find(hash, |&t| {
            self.templates.get(t as usize) == template.as_slice()
        })?;
        let same =
            |id: StrId| self.template[id as usize] == t && self.numbers.get(id as usize) == numbers;
        if !self.indexed {
            return (0..self.len() as StrId).find(|&id| same(id));
        }
        self.index
            .find(
                hash_entry(self.template_hashes[t as usize], &numbers),
                |&id| same(id),
            )
            .copied()
    }

    /// The template of `id`: texts equal but for their numbers share it.
    pub fn template_of(&self, id: StrId) -> TemplateId {
        self.template.get(id as usize).copied().unwrap_or(0)
    }

    /// A template's text, its numbers written `#`: `denoising_step_#`.
    pub fn template_text(&self, t: TemplateId) -> String {
        let bytes: Vec<u8> = self
            .templates
            .get(t as usize)
            .iter()
            .map(|&b| if b == NUMBER { b'#' } else { b })
            .collect();
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Whether `needle` (holding no digit) occurs in the texts of template `t`: a text's
    /// digit-free stretches are its template's, so one test answers for all of them.
    pub fn template_contains(&self, t: TemplateId, needle: &[u8]) -> bool {
        debug_assert!(!needle.iter().any(u8::is_ascii_digit));
        let template = self.templates.get(t as usize);
        needle.is_empty() || template.windows(needle.len()).any(|w| w == needle)
    }

    /// Like [`StringTable::template_contains`], ASCII letters in any case (`needle` lower
    /// case).
    pub fn template_contains_ascii_case(&self, t: TemplateId, needle: &[u8]) -> bool {
        let template = self.templates.get(t as usize);
        needle.is_empty()
            || template
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
    }

    /// Whether the text of `id` holds a digit: its numbers, or its template's own digits.
    pub fn has_digits(&self, id: StrId) -> bool {
        !self.numbers.get(id as usize).is_empty() || self.template_has_digits(self.template_of(id))
    }

    /// Whether template `t` holds digits of its own (digits inside a word, kept as text):
    /// then a query's digits may stand in it, not only in the numbers.
    pub fn template_has_digits(&self, t: TemplateId) -> bool {
        self.templates
            .get(t as usize)
            .iter()
            .any(u8::is_ascii_digit)
    }

    /// The numbers' places of template `t` (bit k: its k-th number; bit 63: the 63rd on)
    /// that `run` may stand in: those right after the query's text before the run.
    pub fn places_for(&self, t: TemplateId, run: &DigitRun) -> u64 {
        if run.before.is_empty() {
            return u64::MAX;
        }
        let template = self.templates.get(t as usize);
        let mut places = 0u64;
        let mut k = 0u32;
        for (pos, &b) in template.iter().enumerate() {
            if b != NUMBER {
                continue;
            }
            let text = &template[..pos];
            if text.len() >= run.before.len()
                && text[text.len() - run.before.len()..].eq_ignore_ascii_case(&run.before)
            {
                places |= 1 << k.min(63);
            }
            k += 1;
        }
        places
    }

    /// Whether one of the numbers of `id` can hold `run` where its query has it: needed for
    /// the text to hold the query, and found without joining the text.
    pub fn numbers_can_hold(&self, id: StrId, run: &DigitRun) -> bool {
        self.numbers_can_hold_at(id, run, u64::MAX)
    }

    /// [`StringTable::numbers_can_hold`], testing only the numbers in `places` (from
    /// [`StringTable::places_for`] of the text's template).
    pub fn numbers_can_hold_at(&self, id: StrId, run: &DigitRun, places: u64) -> bool {
        let numbers = self.numbers.get(id as usize);
        let mut at = 0;
        for k in 0u32.. {
            if at >= numbers.len() || (k < 63 && places >> k == 0) {
                break;
            }
            let wanted = places & (1 << k.min(63)) != 0;
            let code = take_varint(numbers, &mut at);
            let fits = if code & 1 == 0 {
                wanted && run.fits_value(code >> 1)
            } else {
                let end = (at + (code >> 1) as usize).min(numbers.len());
                let digits = &numbers[at..end];
                at = end;
                wanted && run.fits(digits)
            };
            if fits {
                return true;
            }
        }
        false
    }

    /// The table as five columns (templates' bytes and ends, each string's template, the
    /// numbers' bytes and ends), for the cache.
    pub(crate) fn columns(&self) -> StringColumns<'_> {
        StringColumns {
            template_bytes: &self.templates.bytes,
            template_ends: &self.templates.ends,
            template: &self.template,
            number_bytes: &self.numbers.bytes,
            number_ends: &self.numbers.ends,
        }
    }

    /// A frozen table from [`StringTable::columns`]; `None` unless every end and template
    /// id is in range (so no lookup can fail on a damaged file).
    pub(crate) fn from_columns(
        template_bytes: Vec<u8>,
        template_ends: Vec<u64>,
        template: Vec<TemplateId>,
        number_bytes: Vec<u8>,
        number_ends: Vec<u64>,
    ) -> Option<Self> {
        let arena_ok = |bytes: &[u8], ends: &[u64]| {
            ends.is_sorted() && ends.last().is_none_or(|&e| e <= bytes.len() as u64)
        };
        let ok = arena_ok(&template_bytes, &template_ends)
            && arena_ok(&number_bytes, &number_ends)
            && number_ends.len() == template.len()
            && template.iter().all(|&t| (t as usize) < template_ends.len());
        if !ok {
            return None;
        }
        let mut table = Self {
            templates: Arena {
                bytes: template_bytes,
                ends: template_ends,
            },
            template,
            numbers: Arena {
                bytes: number_bytes,
                ends: number_ends,
            },
            ..Default::default()
        };
        let arena = &table.templates;
        table.template_hashes = (0..arena.len())
            .map(|t| hash_bytes(&[arena.get(t)]))
            .collect();
        let hashes = &table.template_hashes;
        let mut index = HashTable::with_capacity(arena.len());
        for t in 0..arena.len() as TemplateId {
            index.insert_unique(hashes[t as usize], t, |&t| hashes[t as usize]);
        }
        table.template_index = index;
        Some(table)
    }

    pub fn templates_len(&self) -> usize {
        self.templates.len()
    }

    pub fn len(&self) -> usize {
        self.template.len()
    }

    pub fn is_empty(&self) -> bool {
        self.template.is_empty()
    }

    /// Heap bytes held, for the bytes-per-event figure.
    pub fn heap_bytes(&self) -> usize {
        let index = (self.index.capacity() + self.template_index.capacity()) * 5;
        let hashes = (self.hashes.capacity() + self.template_hashes.capacity()) * 8;
        self.templates.heap_bytes()
            + hashes
            + self.numbers.heap_bytes()
            + self.template.capacity() * 4
            + index
    }
}

#[cfg(test)]
mod tests;
