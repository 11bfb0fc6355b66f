//! Typed NVTX payloads (`NVTX_PAYLOAD_SCHEMAS` / `NVTX_PAYLOAD_SCHEMA_ENTRIES`, blobs in
//! `NVTX_EVENTS.binaryData`), decoded for NCCL's schemas: the ones with a "NCCL
//! communicator ID" field. A blob is a 32-byte header (u32 domain id, u32, u32 schema id,
//! u32, u64 payload size, u64 total size, little-endian), then the payload with each field
//! at its entry's offset. The schema's payload size is authoritative.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::trace::NcclFields;

const HEADER_BYTES: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Comm,
    Bytes,
    Peer,
    Ranks,
    Rank,
    CudaDevice,
}

impl Field {
    fn of_name(name: &str) -> Option<Field> {
        Some(match name {
            "NCCL communicator ID" => Field::Comm,
            "Message size [bytes]" => Field::Bytes,
            "Peer rank" => Field::Peer,
            "No. of ranks" => Field::Ranks,
            "Rank" => Field::Rank,
            "CUDA device" => Field::CudaDevice,
            _ => return None,
        })
    }
}

/// Width in bytes of an integer entry type of the NVTX payload extension
/// (`NVTX_PAYLOAD_ENTRY_TYPE_*`); `None` for the rest (floats, nested schemas, enums).
fn width_of(entry_type: i64) -> Option<usize> {
    Some(match entry_type {
        1 | 2 | 11 | 12 => 1,
        3 | 4 | 13 | 14 => 2,
        5 | 6 | 15 | 16 => 4,
        7..=10 | 17 | 18 | 22 | 23 => 8,
        _ => return None,
    })
}

/// A schema entry as the export lists it: (index, type, name, offset).
type Entry = (i64, i64, String, Option<i64>);

#[derive(Debug, Clone)]
struct Schema {
    payload_bytes: usize,
    /// (field, offset, width)
    fields: Vec<(Field, usize, usize)>,
}

/// NCCL's payload schemas of an export, by (domain id, schema id).
#[derive(Debug, Default, Clone)]
pub struct PayloadSchemas {
    schemas: HashMap<(u32, u32), Schema>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecodable {
    /// Shorter than the header plus the schema's payload.
    Short,
    /// A schema id the domain never declared.
    Foreign,
}

impl PayloadSchemas {
    /// Reads the schemas; an export without them (or with tables of another shape) has none.
    pub fn read(conn: &Connection) -> PayloadSchemas {
        Self::try_read(conn).unwrap_or_default()
    }

    fn try_read(conn: &Connection) -> rusqlite::Result<PayloadSchemas> {
        let mut sizes: HashMap<(u32, u32), usize> = HashMap::new();
        let mut stmt =
            conn.prepare("SELECT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<i64>>(2)?,
            ))
        })?;
        for row in rows {
            if let (Some(d), Some(s), Some(size)) = row? {
                // Each process declares its schemas: the same rows repeat.
                sizes
                    .entry((d as u32, s as u32))
                    .or_insert(size.max(0) as usize);
            }
        }
        let mut entries: HashMap<(u32, u32), Vec<Entry>> = HashMap::new();
        let mut stmt = conn.prepare(
            "SELECT domainId, schemaId, idx, type, name, offset FROM NVTX_PAYLOAD_SCHEMA_ENTRIES",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<i64>>(5)?,
            ))
        })?;
        for row in rows {
            if let (Some(d), Some(s), Some(idx), Some(ty), name, offset) = row? {
                let list = entries.entry((d as u32, s as u32)).or_default();
                if !list.iter().any(|e| e.0 == idx) {
                    list.push((idx, ty, name.unwrap_or_default(), offset));
                }
            }
        }
        let mut schemas = HashMap::new();
        for (key, mut list) in entries {
            let Some(&payload_bytes) = sizes.get(&key) else {
                continue;
            };
            list.sort_by_key(|e| e.0);
            let mut fields = Vec::new();
            let mut next = 0usize; // where a field without an offset goes (natural alignment)
            let mut valid = true;
            for (_, ty, name, offset) in list {
                let width = width_of(ty);
                let at = match offset {
                    Some(o) if o >= 0 => o as usize,
                    Some(_) => {
                        valid = false;
                        break;
                    }
                    None => {
                        let align = width.unwrap_or(8);
                        next.div_ceil(align) * align
                    }
                };
                next = at + width.unwrap_or(8);
                if let (Some(field), Some(width)) = (Field::of_name(&name), width) {
                    if at + width > payload_bytes {
                        valid = false;
                        break;
                    }
                    fields.push((field, at, width));
                }
            }
            if valid && fields.iter().any(|f| f.0 == Field::Comm) {
                schemas.insert(
                    key,
                    Schema {
                        payload_bytes,
                        fields,
                    },
                );
            }
        }
        Ok(PayloadSchemas { schemas })
    }

    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }

    /// Whether `domain` declared a NCCL schema: its ranges are NCCL's calls.
    pub fn is_nccl_domain(&self, domain: u32) -> bool {
        self.schemas.keys().any(|k| k.0 == domain)
    }

    /// The fields of a blob of a range in `domain`.
    pub fn decode(&self, domain: u32, blob: &[u8]) -> Result<NcclFields, Undecodable> {
        if blob.len() < HEADER_BYTES {
            return Err(Undecodable::Short);
        }
        let schema_id = u32::from_le_bytes(blob[8..12].try_into().expect("4 bytes"));
        let schema = self
            .schemas
            .get(&(domain, schema_id))
            .ok_or(Undecodable::Foreign)?;
        let payload = &blob[HEADER_BYTES..];
        if payload.len() < schema.payload_bytes {
            return Err(Undecodable::Short);
        }
        let mut f = NcclFields::default();
        for &(field, at, width) in &schema.fields {
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(&payload[at..at + width]);
            let v = u64::from_le_bytes(bytes);
            let small = u32::try_from(v).unwrap_or(u32::MAX);
            match field {
                Field::Comm => f.comm = v,
                Field::Bytes => f.bytes = v,
                Field::Peer => f.peer = small,
                Field::Ranks => f.nranks = small,
                Field::Rank => f.rank = small,
                Field::CudaDevice => f.cuda_device = small,
            }
        }
        Ok(f)
    }
}

/// A blob as nsys writes one (the generator and the tests write them with this).
pub fn encode_blob(domain: u32, schema_id: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_BYTES + payload.len());
    b.extend_from_slice(&domain.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&schema_id.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    b.extend_from_slice(&((HEADER_BYTES + payload.len()) as u64).to_le_bytes());
    b.extend_from_slice(payload);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemas() -> PayloadSchemas {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId, schemaId, name, type, flags, numEntries, payloadSize, alignTo);
             CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId, schemaId, idx, flags, type, name, description, arrayOrUnionDetail, offset);
             INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, 16777226, NULL, 1, NULL, 3, 24, NULL);
             INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, 16777226, NULL, 1, NULL, 3, 24, NULL);
             INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, 16777226, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL);
             INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, 16777226, 1, NULL, 22, 'Message size [bytes]', NULL, NULL, 8);
             INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, 16777226, 2, NULL, 5, 'Peer rank', NULL, NULL, 16);
             INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, 99, NULL, 1, NULL, 1, 8, NULL);
             INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, 99, 0, NULL, 18, 'Something else', NULL, NULL, NULL);",
        )
        .unwrap();
        PayloadSchemas::read(&conn)
    }

    fn send(comm: u64, bytes: u64, peer: u32) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&comm.to_le_bytes());
        p.extend_from_slice(&bytes.to_le_bytes());
        p.extend_from_slice(&peer.to_le_bytes());
        p.extend_from_slice(&[0; 4]);
        encode_blob(1, 16777226, &p)
    }

    #[test]
    fn a_blob_reads_at_its_schema_offsets() {
        let s = schemas();
        assert!(s.is_nccl_domain(1) && !s.is_nccl_domain(0));
        let f = s.decode(1, &send(0xABCD, 13_819_904, 3)).unwrap();
        assert_eq!((f.comm, f.bytes, f.peer), (0xABCD, 13_819_904, 3));
        assert_eq!(f.nranks, crate::trace::NONE);
    }

    #[test]
    fn short_foreign_and_random_blobs_are_refused() {
        let s = schemas();
        let blob = send(1, 2, 3);
        assert_eq!(s.decode(1, &blob[..40]), Err(Undecodable::Short));
        assert_eq!(s.decode(1, &blob[..10]), Err(Undecodable::Short));
        assert_eq!(s.decode(2, &blob), Err(Undecodable::Foreign));
        assert_eq!(
            s.decode(1, &encode_blob(1, 99, &[0; 8])),
            Err(Undecodable::Foreign)
        );
        let mut rng = fastrand::Rng::with_seed(5);
        for n in 0..200 {
            let random: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
            let _ = s.decode(1, &random); // never a panic
        }
    }
}
