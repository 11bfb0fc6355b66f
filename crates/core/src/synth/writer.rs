//! Writes nsys-shaped SQLite files: the tables exactly as nsys creates them (DDL taken from
//! real exports), in either flavour: 2024+ (`META_DATA_EXPORT`, inline NVTX `text`) or 2023
//! (`EXPORT_META_DATA`, NVTX `textId` into `StringIds`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::{Connection, params};

use super::program::KERNELS;
use super::sim::{
    ApiRow, GraphEventRow, GraphExecRow, GraphTrace, KernelRow, MemRow, NodeEventRow, NvtxRow,
    OsrtRow,
};

/// A payload schema's entry: (type, name, offset).
type SchemaEntry = (i64, &'static str, Option<i64>);

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
pub enum Flavour {
    /// nsys 2024.x and later.
    #[value(name = "2024")]
    Nsys2024,
    /// nsys 2023.1.
    #[value(name = "2023")]
    Nsys2023,
}

const DDL_2024: &str = include_str!("ddl_2024.sql");
const DDL_2023: &str = include_str!("ddl_2023.sql");

pub struct Writer {
    conn: Connection,
    flavour: Flavour,
    strings: HashMap<String, i64>,
    pub rows: BTreeMap<&'static str, u64>,
    grid_id: i64,
    /// The last callchain id given (samples' and OS runtime calls' chains).
    chain_id: i64,
    /// Tables made on first use (call stacks: only with `--cpu-samples`).
    made: Vec<&'static str>,
}

/// `globalPid` as nsys encodes it: pid in bits 24..48, a machine id above.
pub fn global_pid(pid: u32) -> i64 {
    (1i64 << 48) | ((pid as i64) << 24)
}

/// A new export with every table of `flavour` and no rows, for hand-built test traces.
pub fn empty_export(path: &Path, flavour: Flavour) -> rusqlite::Result<Connection> {
    let _ = std::fs::remove_file(path);
    let conn = Connection::open(path)?;
    conn.execute_batch(match flavour {
        Flavour::Nsys2024 => DDL_2024,
        Flavour::Nsys2023 => DDL_2023,
    })?;
    Ok(conn)
}

impl Writer {
    /// A new export at `path`, one of `files` written at once (a job's ranks share 2 GiB of
    /// page cache: 512 ranks at 64 MiB each held 11 GB before a page was written).
    pub fn create(path: &Path, flavour: Flavour, files: usize) -> rusqlite::Result<Self> {
        let _ = std::fs::remove_file(path);
        let conn = Connection::open(path)?;
        let cache_kib = ((2 << 20) / files.max(1)).clamp(2 << 10, 64 << 10);
        // A generator's output is written once, start to end: no journal, no fsync.
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -{cache_kib};"
        ))?;
        conn.execute_batch(match flavour {
            Flavour::Nsys2024 => DDL_2024,
            Flavour::Nsys2023 => DDL_2023,
        })?;
        conn.execute_batch("BEGIN")?;
        Ok(Self {
            conn,
            flavour,
            strings: HashMap::new(),
            rows: BTreeMap::new(),
            grid_id: 0,
            chain_id: 0,
            made: Vec::new(),
        })
    }

    /// Id of `s` in `StringIds` (written at the end).
    pub fn string_id(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.insert(s.to_string(), id);
        id
    }

    pub fn metadata(&mut self, nsys_version: &str, schema_version: &str) -> rusqlite::Result<()> {
        let table = match self.flavour {
            Flavour::Nsys2024 => "META_DATA_EXPORT",
            Flavour::Nsys2023 => "EXPORT_META_DATA",
        };
        for (k, v) in [
            ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            ("EXPORT_PRODUCT_VERSION", nsys_version),
            ("EXPORT_SCHEMA_VERSION", schema_version),
            ("EXPORT_GENERATOR", "nsys-explorer synth (synthetic trace)"),
        ] {
            self.conn.execute(
                &format!("INSERT INTO {table} (name, value) VALUES (?1, ?2)"),
                params![k, v],
            )?;
        }
        Ok(())
    }

    pub fn machine(
        &mut self,
        gpus: u32,
        gpu_name: &str,
        capture: (i64, i64),
        utc_start_ns: i64,
    ) -> rusqlite::Result<()> {
        for id in 0..gpus {
            self.conn.execute(
                "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, totalMemory, smCount, memoryBandwidth, computeMajor, computeMinor) VALUES (0, ?1, ?2, ?3, 85899345920, 132, 3352000000000, 9, 0)",
                params![id, gpu_name, format!("0000:{:02x}:00.0", 0x18 + id * 0x10)],
            )?;
        }
        self.conn.execute(
            "INSERT INTO ANALYSIS_DETAILS (globalVid, duration, startTime, stopTime) VALUES (?1, ?2, ?3, ?4)",
            params![1i64 << 48, capture.1 - capture.0, capture.0, capture.1],
        )?;
        self.conn.execute(
            "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?1, '2025-11-30T12:00:00Z', '2025-11-30T12:00:00')",
            params![utc_start_ns],
        )?;
        Ok(())
    }

    pub fn process(&mut self, pid: u32, name: &str, thread_name: &str) -> rusqlite::Result<()> {
        let gpid = global_pid(pid);
        self.conn.execute(
            "INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)",
            params![gpid, pid, name],
        )?;
        let name_id = self.string_id(thread_name);
        self.conn.execute(
            "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, 0, ?2)",
            params![name_id, gpid | pid as i64],
        )?;
        Ok(())
    }

    /// Names another thread of process `pid`.
    pub fn thread_name(&mut self, pid: u32, tid: u32, name: &str) -> rusqlite::Result<()> {
        let name_id = self.string_id(name);
        self.conn.execute(
            "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, 0, ?2)",
            params![name_id, global_pid(pid) | tid as i64],
        )?;
        Ok(())
    }

    pub fn kernel(&mut self, pid: u32, device: u32, row: &KernelRow) -> rusqlite::Result<()> {
        let spec = &KERNELS[row.kernel];
        let short = self.string_id(spec.short);
        let demangled = self.string_id(spec.demangled);
        self.grid_id += 1;
        let sql = match self.flavour {
            Flavour::Nsys2024 => {
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig) VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, ?8, ?9, NULL, 0, 0, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 0, ?17, 0, 0, ?18, ?17, ?19, 1)"
            }
            Flavour::Nsys2023 => {
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, 0, 0, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 0, ?17, 0, 0, ?18, ?17, ?19, 1)"
            }
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        stmt.execute(params![
            row.start,
            row.end,
            device,
            device + 1,
            row.stream,
            row.correlation_id,
            global_pid(pid),
            demangled,
            short,
            spec.registers,
            spec.grid[0],
            spec.grid[1],
            spec.grid[2],
            spec.block[0],
            spec.block[1],
            spec.block[2],
            spec.shared_bytes,
            self.grid_id,
            row.graph_node.map(|(node, _)| node)
        ])?;
        *self.rows.entry("CUPTI_ACTIVITY_KIND_KERNEL").or_default() += 1;
        Ok(())
    }

    pub fn memcpy(&mut self, pid: u32, device: u32, row: &MemRow) -> rusqlite::Result<()> {
        let (src_kind, dst_kind) = if row.kind == 2 { (1, 0) } else { (2, 1) };
        let sql = match self.flavour {
            Flavour::Nsys2024 => {
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, bytes, copyKind, deprecatedSrcId, srcKind, dstKind, srcDeviceId, srcContextId, dstDeviceId, dstContextId, migrationCause, graphNodeId, virtualAddress) VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11, ?3, ?4, ?3, ?4, NULL, NULL, NULL)"
            }
            Flavour::Nsys2023 => {
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, deprecatedSrcId, srcKind, dstKind, srcDeviceId, srcContextId, dstDeviceId, dstContextId, migrationCause, graphNodeId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11, ?3, ?4, ?3, ?4, NULL, NULL)"
            }
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        stmt.execute(params![
            row.start,
            row.end,
            device,
            device + 1,
            row.stream,
            row.correlation_id,
            global_pid(pid),
            row.bytes as i64,
            row.kind,
            src_kind,
            dst_kind
        ])?;
        *self.rows.entry("CUPTI_ACTIVITY_KIND_MEMCPY").or_default() += 1;
        Ok(())
    }

    pub fn memset(&mut self, pid: u32, device: u32, row: &MemRow) -> rusqlite::Result<()> {
        let sql = match self.flavour {
            Flavour::Nsys2024 => {
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, value, bytes, graphNodeId, memKind) VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, 0, ?8, NULL, ?9)"
            }
            Flavour::Nsys2023 => {
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, graphNodeId, memKind) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, NULL, ?9)"
            }
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        stmt.execute(params![
            row.start,
            row.end,
            device,
            device + 1,
            row.stream,
            row.correlation_id,
            global_pid(pid),
            row.bytes as i64,
            row.kind
        ])?;
        *self.rows.entry("CUPTI_ACTIVITY_KIND_MEMSET").or_default() += 1;
        Ok(())
    }

    pub fn api(&mut self, pid: u32, row: &ApiRow) -> rusqlite::Result<()> {
        let name = self.string_id(row.name);
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue, callchainId) VALUES (?1, ?2, 0, ?3, ?4, ?5, 0, NULL)",
        )?;
        stmt.execute(params![
            row.start,
            row.end,
            global_pid(pid) | pid as i64,
            row.correlation_id,
            name
        ])?;
        *self.rows.entry("CUPTI_ACTIVITY_KIND_RUNTIME").or_default() += 1;
        Ok(())
    }

    /// Thread scheduling: nsys records every context switch of the process' threads, and
    /// in real exports this table is as big as the CUDA ones. Three switches of the NCCL
    /// proxy thread (tid + 1) per API call make `large` about the size of the seed's export;
    /// the loader must skip them at no cost.
    pub fn sched_events(&mut self, pid: u32, calls: &[ApiRow]) -> rusqlite::Result<()> {
        let proxy = global_pid(pid) | (pid as i64 + 1);
        let sql = match self.flavour {
            Flavour::Nsys2024 => {
                "INSERT INTO SCHED_EVENTS (start, cpu, isSchedIn, globalTid, threadState, threadBlock) VALUES (?1, ?2, ?3, ?4, 2, 0)"
            }
            Flavour::Nsys2023 => {
                "INSERT INTO SCHED_EVENTS (start, cpu, isSchedIn, globalTid) VALUES (?1, ?2, ?3, ?4)"
            }
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        for call in calls {
            for k in 0..3i64 {
                let out_at = call.start + k * 700;
                let cpu = (pid as i64 * 8 + k) % 64;
                stmt.execute(params![out_at, cpu, 0, proxy])?;
                stmt.execute(params![out_at + 350, cpu, 1, proxy])?;
            }
        }
        *self.rows.entry("SCHED_EVENTS").or_default() += 6 * calls.len() as u64;
        Ok(())
    }

    /// An OS runtime call (event class 27) of the main thread or the polling one, with
    /// its backtrace (innermost frame first) when `backtrace` has one.
    pub fn osrt(
        &mut self,
        pid: u32,
        row: &OsrtRow,
        backtrace: &[super::samples::Frame],
    ) -> rusqlite::Result<()> {
        let name = self.string_id(row.name);
        let chain = if backtrace.is_empty() {
            0
        } else {
            self.chain("OSRT_CALLCHAINS", backtrace)?
        };
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO OSRT_API (start, end, eventClass, globalTid, correlationId, nameId, returnValue, nestingLevel, callchainId) VALUES (?1, ?2, 27, ?3, 0, ?4, ?5, 0, ?6)",
        )?;
        stmt.execute(params![
            row.start,
            row.end,
            global_pid(pid) | (pid + row.tid_offset) as i64,
            name,
            row.return_value,
            chain
        ])?;
        *self.rows.entry("OSRT_API").or_default() += 1;
        Ok(())
    }

    fn make(&mut self, table: &'static str, ddl: &str) -> rusqlite::Result<()> {
        if !self.made.contains(&table) {
            self.conn.execute_batch(ddl)?;
            self.made.push(table);
        }
        Ok(())
    }

    /// A callchain of `table` (frames innermost first, as nsys numbers `stackDepth`): its id.
    fn chain(
        &mut self,
        table: &'static str,
        frames: &[super::samples::Frame],
    ) -> rusqlite::Result<i64> {
        self.make(table, &format!(
            "CREATE TABLE {table} (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER, unwindMethod INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));"
        ))?;
        self.chain_id += 1;
        let id = self.chain_id;
        for (depth, (symbol, module)) in frames.iter().enumerate() {
            let (s, m) = (self.string_id(symbol), self.string_id(module));
            let mut stmt = self.conn.prepare_cached(&format!(
                "INSERT INTO {table} (id, symbol, module, kernelMode, thumbCode, unresolved, specialEntry, originalIP, unwindMethod, stackDepth) VALUES (?1, ?2, ?3, 0, 0, ?4, 0, NULL, 1, ?5)"
            ))?;
            stmt.execute(params![
                id,
                s,
                m,
                symbol.starts_with("0x") as i64,
                depth as i64
            ])?;
        }
        *self.rows.entry(table).or_default() += frames.len() as u64;
        Ok(id)
    }

    /// A device-memory event (`--cuda-memory-usage=true`): an allocation (`bytes` > 0) or
    /// a free of `address`, of memory kind `kind` (0/1 host, 2 device).
    pub fn memory_event(
        &mut self,
        pid: u32,
        device: u32,
        (time, bytes, address, kind): super::memory::Event,
        correlation_id: u32,
    ) -> rusqlite::Result<()> {
        self.make(
            "CUDA_GPU_MEMORY_USAGE_EVENTS",
            "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER, deviceId INTEGER, contextId INTEGER, address INTEGER, pc INTEGER, bytes INTEGER, memKind INTEGER, memoryOperationType INTEGER, name TEXT, correlationId INTEGER);",
        )?;
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType, name, correlationId) VALUES (?1, ?2, ?3, 1, ?4, 0, ?5, ?6, ?7, NULL, ?8)",
        )?;
        stmt.execute(params![
            time,
            global_pid(pid),
            device,
            address as i64,
            bytes.abs(),
            kind,
            (bytes < 0) as i64,
            correlation_id
        ])?;
        *self.rows.entry("CUDA_GPU_MEMORY_USAGE_EVENTS").or_default() += 1;
        Ok(())
    }

    /// The names of GPU `gpu`'s metrics (`TARGET_INFO_GPU_METRICS`).
    pub fn gpu_metric_names(
        &mut self,
        type_id: i64,
        names: &[(i64, &str)],
    ) -> rusqlite::Result<()> {
        self.make(
            "TARGET_INFO_GPU_METRICS",
            "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL);",
        )?;
        for &(id, name) in names {
            self.conn.execute(
                "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?1, 0, 'GH100', ?2, ?3)",
                params![type_id, id, name],
            )?;
        }
        Ok(())
    }

    /// One metric's value at one sample (`GPU_METRICS`).
    pub fn gpu_metric(
        &mut self,
        time: i64,
        type_id: i64,
        metric_id: i64,
        value: i64,
    ) -> rusqlite::Result<()> {
        self.make(
            "GPU_METRICS",
            "CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, value INTEGER NOT NULL);",
        )?;
        let mut stmt = self
            .conn
            .prepare_cached("INSERT INTO GPU_METRICS VALUES (?1, ?2, ?3, ?4)")?;
        stmt.execute(params![time, type_id, metric_id, value])?;
        *self.rows.entry("GPU_METRICS").or_default() += 1;
        Ok(())
    }

    /// A CPU sample of thread `pid + tid_offset` at `time` with its stack.
    pub fn sample(
        &mut self,
        pid: u32,
        tid_offset: u32,
        time: i64,
        stack: &[super::samples::Frame],
    ) -> rusqlite::Result<()> {
        self.make(
            "COMPOSITE_EVENTS",
            "CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL, cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);",
        )?;
        let id = self.chain("SAMPLING_CALLCHAINS", stack)?;
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO COMPOSITE_EVENTS (id, start, cpu, threadState, globalTid, cpuCycles) VALUES (?1, ?2, 0, 1, ?3, 0)",
        )?;
        stmt.execute(params![
            id,
            time,
            global_pid(pid) | (pid + tid_offset) as i64
        ])?;
        *self.rows.entry("COMPOSITE_EVENTS").or_default() += 1;
        Ok(())
    }

    pub fn nvtx_range(&mut self, pid: u32, row: &NvtxRow) -> rusqlite::Result<()> {
        let tid = global_pid(pid) | pid as i64;
        if let Some(blob) = &row.nccl {
            // NCCL's ranges: registered strings (`textId`), its domain, a blob when any.
            let text_id = self.string_id(&row.text);
            let blob = (!blob.is_empty()).then_some(blob);
            let mut stmt = self.conn.prepare_cached(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, domainId, binaryData) VALUES (?1, ?2, 59, ?3, ?4, ?5, ?6)",
            )?;
            stmt.execute(params![
                row.start,
                row.end,
                text_id,
                tid,
                super::sim::NCCL_DOMAIN,
                blob
            ])?;
            *self.rows.entry("NVTX_EVENTS").or_default() += 1;
            return Ok(());
        }
        match self.flavour {
            Flavour::Nsys2024 => {
                let mut stmt = self.conn.prepare_cached(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, color, text, globalTid, domainId) VALUES (?1, ?2, 59, ?3, ?4, ?5, 0)",
                )?;
                stmt.execute(params![row.start, row.end, row.color, row.text, tid])?;
            }
            Flavour::Nsys2023 => {
                let text_id = self.string_id(&row.text);
                let mut stmt = self.conn.prepare_cached(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, color, textId, globalTid, domainId) VALUES (?1, ?2, 59, ?3, ?4, ?5, 0)",
                )?;
                stmt.execute(params![row.start, row.end, row.color, text_id, tid])?;
            }
        }
        *self.rows.entry("NVTX_EVENTS").or_default() += 1;
        Ok(())
    }

    /// NCCL's domain, its payload schemas (as nsys 2026.2 declares them) and the rank's
    /// `ncclCommInitRankConfig` call, at `at`.
    pub fn nccl_domain(
        &mut self,
        pid: u32,
        at: i64,
        rank: u32,
        ranks: u32,
        with_blobs: bool,
    ) -> rusqlite::Result<()> {
        use super::sim::{NCCL_COMM, NCCL_DOMAIN, SCHEMA_COMM_INIT, SCHEMA_RECV, SCHEMA_SEND};
        let tid = global_pid(pid) | pid as i64;
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER, flags INTEGER, numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER);
             CREATE TABLE IF NOT EXISTS NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER, schemaId INTEGER, idx INTEGER, flags INTEGER, type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER, offset INTEGER);",
        )?;
        let entries: [(u32, &[SchemaEntry]); 3] = [
            (
                SCHEMA_COMM_INIT,
                &[
                    (18, "NCCL communicator ID", None),
                    (5, "No. of ranks", Some(8)),
                    (5, "Rank", Some(12)),
                    (5, "CUDA device", Some(16)),
                ],
            ),
            (
                SCHEMA_SEND,
                &[
                    (18, "NCCL communicator ID", None),
                    (22, "Message size [bytes]", Some(8)),
                    (5, "Peer rank", Some(16)),
                ],
            ),
            (
                SCHEMA_RECV,
                &[
                    (18, "NCCL communicator ID", None),
                    (22, "Message size [bytes]", Some(8)),
                    (5, "Peer rank", Some(16)),
                ],
            ),
        ];
        for (schema, fields) in entries {
            self.conn.execute(
                "INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (?1, ?2, NULL, 1, NULL, ?3, 24, NULL)",
                params![NCCL_DOMAIN, schema, fields.len() as i64],
            )?;
            for (idx, (ty, name, offset)) in fields.iter().enumerate() {
                self.conn.execute(
                    "INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (?1, ?2, ?3, NULL, ?4, ?5, NULL, NULL, ?6)",
                    params![NCCL_DOMAIN, schema, idx as i64, ty, name, offset],
                )?;
            }
        }
        self.conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?1, NULL, 75, 'NCCL', ?2, ?3)",
            params![at - 2_000, tid, NCCL_DOMAIN],
        )?;
        let init = super::sim::nccl_payload(SCHEMA_COMM_INIT, NCCL_COMM, ranks as u64, rank, rank);
        let row = NvtxRow {
            start: at,
            end: at + 50_000,
            text: "ncclCommInitRankConfig".into(),
            color: None,
            nccl: Some(if with_blobs { init } else { Vec::new() }),
        };
        *self.rows.entry("NVTX_EVENTS").or_default() += 1;
        self.nvtx_range(pid, &row)
    }

    /// A domain-create row and a mark: NVTX events that are not ranges.
    pub fn nvtx_domain_and_mark(
        &mut self,
        pid: u32,
        domain_id: u32,
        domain: &str,
        mark_at: i64,
    ) -> rusqlite::Result<()> {
        let tid = global_pid(pid) | pid as i64;
        self.conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?1, NULL, 75, ?2, ?3, ?4)",
            params![mark_at - 1_000, domain, tid, domain_id],
        )?;
        self.conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?1, NULL, 34, 'pipeline ready', ?2, 0)",
            params![mark_at, tid],
        )?;
        *self.rows.entry("NVTX_EVENTS").or_default() += 2;
        Ok(())
    }

    /// How graphs were traced, as nsys records it in `META_DATA_CAPTURE`.
    pub fn graph_trace_mode(&mut self, mode: GraphTrace) -> rusqlite::Result<()> {
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT);",
        )?;
        self.conn.execute(
            "INSERT INTO META_DATA_CAPTURE (name, value) VALUES ('CUDA_GRAPH_TRACE_OPTIONS:MODE', ?1)",
            params![match mode {
                GraphTrace::Graph => "Graph",
                GraphTrace::Node => "Node",
            }],
        )?;
        Ok(())
    }

    /// A graph launch's execution (graph-level trace; the table made on first use, as nsys
    /// writes only the tables that have rows).
    pub fn graph_exec(
        &mut self,
        pid: u32,
        device: u32,
        row: &GraphExecRow,
    ) -> rusqlite::Result<()> {
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL);",
        )?;
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, graphId, graphExecId) VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, ?8, ?9)",
        )?;
        stmt.execute(params![
            row.start,
            row.end,
            device,
            device + 1,
            row.stream,
            row.correlation_id,
            global_pid(pid),
            row.graph,
            row.exec
        ])?;
        *self
            .rows
            .entry("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
            .or_default() += 1;
        Ok(())
    }

    /// A graph made by capture (`exec` none) or instantiated (`CUDA_GRAPH_EVENTS`).
    pub fn graph_event(&mut self, pid: u32, row: &GraphEventRow) -> rusqlite::Result<()> {
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS CUDA_GRAPH_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER, graphId INTEGER, originalGraphId INTEGER, graphExecId INTEGER);",
        )?;
        let name = self.string_id(if row.exec.is_some() {
            "cudaGraphInstantiate"
        } else {
            "cudaStreamEndCapture"
        });
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO CUDA_GRAPH_EVENTS (start, end, eventClass, globalTid, nameId, graphId, originalGraphId, graphExecId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7)",
        )?;
        stmt.execute(params![
            row.start,
            row.end,
            if row.exec.is_some() { 131 } else { 132 },
            global_pid(pid) | pid as i64,
            name,
            row.graph,
            row.exec
        ])?;
        *self.rows.entry("CUDA_GRAPH_EVENTS").or_default() += 1;
        Ok(())
    }

    /// A node made by capture (`original` none) or cloned at instantiation.
    pub fn node_event(&mut self, pid: u32, row: &NodeEventRow) -> rusqlite::Result<()> {
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS CUDA_GRAPH_NODE_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER, graphNodeId INTEGER NOT NULL, originalGraphNodeId INTEGER);",
        )?;
        let name = self.string_id("cudaGraphNodeCreation");
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO CUDA_GRAPH_NODE_EVENTS (start, end, eventClass, globalTid, nameId, graphNodeId, originalGraphNodeId) VALUES (?1, ?2, 113, ?3, ?4, ?5, ?6)",
        )?;
        stmt.execute(params![
            row.start,
            row.end,
            global_pid(pid) | pid as i64,
            name,
            row.node,
            row.original
        ])?;
        *self.rows.entry("CUDA_GRAPH_NODE_EVENTS").or_default() += 1;
        Ok(())
    }

    /// Writes `StringIds` and commits.
    pub fn finish(mut self) -> rusqlite::Result<BTreeMap<&'static str, u64>> {
        {
            let mut stmt = self
                .conn
                .prepare("INSERT INTO StringIds (id, value) VALUES (?1, ?2)")?;
            for (value, id) in &self.strings {
                stmt.execute(params![id, value])?;
            }
        }
        self.rows.insert("StringIds", self.strings.len() as u64);
        self.conn.execute_batch("COMMIT")?;
        Ok(self.rows)
    }
}
