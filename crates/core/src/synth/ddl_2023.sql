-- Tables as nsys 2023.1.2 creates them (from shared/docs/nsys-schema/ddl-and-enums.json).

CREATE TABLE StringIds (
    -- Consolidation of repetitive string values.

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID reference value.
    value                       TEXT      NOT NULL                     -- String value.
);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (
    utcEpochNs                  INTEGER,                               -- UTC Epoch timestamp at start of the capture (ns).
    utcTime                     TEXT,                                  -- Start of the capture in UTC.
    localTime                   TEXT                                   -- Start of the capture in local time of target.
);
CREATE TABLE ANALYSIS_DETAILS (
    -- Details about the analysis session.

    globalVid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    duration                    INTEGER   NOT NULL,                    -- The total time span of the entire trace (ns).
    startTime                   INTEGER   NOT NULL,                    -- Trace start timestamp in nanoseconds.
    stopTime                    INTEGER   NOT NULL                     -- Trace stop timestamp in nanoseconds.
);
CREATE TABLE OSRT_API (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    correlationId               INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL,
    nestingLevel                INTEGER,
    callchainId                 INTEGER   NOT NULL
);
CREATE TABLE SCHED_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    cpu                         INTEGER   NOT NULL,                    -- ID of CPU this thread was scheduled in or out.
    isSchedIn                   INTEGER   NOT NULL,                    -- 0 if thread was scheduled out, non-zero otherwise.
    globalTid                   INTEGER                                -- Serialized GlobalId.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- ID used to identify events that this function call has triggered.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    callchainId                 INTEGER                                -- REFERENCES CUDA_CALLCHAINS(id)
);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    demangledName               INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Kernel function name w/ templates
    shortName                   INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Base kernel function name
    mangledName                 INTEGER,                               -- REFERENCES StringIds(id) -- Raw C++ mangled kernel function name
    launchType                  INTEGER,                               -- REFERENCES ENUM_CUDA_KRENEL_LAUNCH_TYPE(id)
    cacheConfig                 INTEGER,                               -- REFERENCES ENUM_CUDA_FUNC_CACHE_CONFIG(id)
    registersPerThread          INTEGER   NOT NULL,                    -- Number of registers required for each thread executing the kernel.
    gridX                       INTEGER   NOT NULL,                    -- X-dimension grid size.
    gridY                       INTEGER   NOT NULL,                    -- Y-dimension grid size.
    gridZ                       INTEGER   NOT NULL,                    -- Z-dimension grid size.
    blockX                      INTEGER   NOT NULL,                    -- X-dimension block size.
    blockY                      INTEGER   NOT NULL,                    -- Y-dimension block size.
    blockZ                      INTEGER   NOT NULL,                    -- Z-dimension block size.
    staticSharedMemory          INTEGER   NOT NULL,                    -- Static shared memory allocated for the kernel (B).
    dynamicSharedMemory         INTEGER   NOT NULL,                    -- Dynamic shared memory reserved for the kernel (B).
    localMemoryPerThread        INTEGER   NOT NULL,                    -- Amount of local memory reserved for each thread (B).
    localMemoryTotal            INTEGER   NOT NULL,                    -- Total amount of local memory reserved for the kernel (B).
    gridId                      INTEGER   NOT NULL,                    -- Unique grid ID of the kernel assigned at runtime.
    sharedMemoryExecuted        INTEGER,                               -- Shared memory size set by the driver.
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    sharedMemoryLimitConfig     INTEGER                                -- REFERENCES ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG(id)
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes transferred (B).
    copyKind                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEMCPY_OPER(id)
    deprecatedSrcId             INTEGER,                               -- Deprecated, use srcDeviceId instead.
    srcKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    dstKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    srcDeviceId                 INTEGER,                               -- Source device ID.
    srcContextId                INTEGER,                               -- Source context ID.
    dstDeviceId                 INTEGER,                               -- Destination device ID.
    dstContextId                INTEGER,                               -- Destination context ID.
    migrationCause              INTEGER,                               -- REFERENCES ENUM_CUDA_UNIF_MEM_MIGRATION(id)
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    virtualAddress              INTEGER                                -- Virtual base address of the page/s being transferred.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- Correlation ID of the synchronization API to which this result is associated.
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    syncType                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUPTI_SYNC_TYPE(id)
    eventId                     INTEGER   NOT NULL                     -- Event ID for which the synchronization API is called.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    value                       INTEGER   NOT NULL,                    -- Value assigned to memory.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes set (B).
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    memKind                     INTEGER                                -- REFERENCES ENUM_CUDA_MEM_KIND(id)
);
CREATE TABLE NVTX_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER,                               -- Event end timestamp (ns).
    eventType                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    rangeId                     INTEGER,                               -- Correlation ID returned from a nvtxRangeStart call.
    category                    INTEGER,                               -- User-controlled ID that can be used to group events.
    color                       INTEGER,                               -- Encoded ARGB color value.
    text                        TEXT,                                  -- Optional text message for non registered strings.
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    endGlobalTid                INTEGER,                               -- Serialized GlobalId.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- Registered NVTX domain
    domainId                    INTEGER,                               -- User-controlled ID that can be used to group events.
    uint64Value                 INTEGER,                               -- One of possible payload value union members.
    int64Value                  INTEGER,                               -- One of possible payload value union members.
    doubleValue                 REAL,                                  -- One of possible payload value union members.
    uint32Value                 INTEGER,                               -- One of possible payload value union members.
    int32Value                  INTEGER,                               -- One of possible payload value union members.
    floatValue                  REAL,                                  -- One of possible payload value union members.
    jsonTextId                  INTEGER,                               -- One of possible payload value union members.
    jsonText                    TEXT                                   -- One of possible payload value union members.
);
CREATE TABLE PROCESSES (
    -- Names and identifiers of processes captured in the report.

    globalPid                   INTEGER,                               -- Serialized GlobalId.
    pid                         INTEGER,                               -- The process ID.
    name                        TEXT                                   -- The process name.
);
CREATE TABLE ThreadNames (
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Thread name
    priority                    INTEGER,                               -- Priority of the thread.
    globalTid                   INTEGER                                -- Serialized GlobalId.
);
CREATE TABLE TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,                    -- Serialized GlobalId.
    id                          INTEGER   NOT NULL,                    -- Device ID.
    name                        TEXT,                                  -- Device name.
    busLocation                 TEXT,                                  -- PCI bus location.
    isDiscrete                  INTEGER,                               -- True if discrete, false if integrated.
    l2CacheSize                 INTEGER,                               -- Size of L2 cache (B).
    totalMemory                 INTEGER,                               -- Total amount of memory on the device (B).
    memoryBandwidth             INTEGER,                               -- Amount of memory transferred (B).
    clockRate                   INTEGER,                               -- Clock frequency (Hz).
    smCount                     INTEGER,                               -- Number of multiprocessors on the device.
    pwGpuId                     INTEGER,                               -- PerfWorks GPU ID.
    uuid                        TEXT,                                  -- Device UUID.
    luid                        INTEGER,                               -- Device LUID.
    chipName                    TEXT,                                  -- Chip name.
    cuDevice                    INTEGER,                               -- CUDA device ID.
    ctxswDevPath                TEXT,                                  -- GPU context switch device node path.
    ctrlDevPath                 TEXT,                                  -- GPU control device node path.
    revision                    INTEGER,                               -- Revision number.
    nodeMask                    INTEGER,                               -- Device node mask.
    constantMemory              INTEGER,                               -- Memory available on device for __constant__ variables (B).
    maxIPC                      INTEGER,                               -- Maximum instructions per count.
    maxRegistersPerBlock        INTEGER,                               -- Maximum number of 32-bit registers available per block.
    maxShmemPerBlock            INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerBlockOptin       INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerSm               INTEGER,                               -- Maximum shared memory available per multiprocessor (B).
    maxRegistersPerSm           INTEGER,                               -- Maximum number of 32-bit registers available per multiprocessor.
    threadsPerWarp              INTEGER,                               -- Warp size in threads.
    asyncEngines                INTEGER,                               -- Number of asynchronous engines.
    maxWarpsPerSm               INTEGER,                               -- Maximum number of warps per multiprocessor.
    maxBlocksPerSm              INTEGER,                               -- Maximum number of blocks per multiprocessor.
    maxThreadsPerBlock          INTEGER,                               -- Maximum number of threads per block.
    maxBlockDimX                INTEGER,                               -- Maximum X-dimension of a block.
    maxBlockDimY                INTEGER,                               -- Maximum Y-dimension of a block.
    maxBlockDimZ                INTEGER,                               -- Maximum Z-dimension of a block.
    maxGridDimX                 INTEGER,                               -- Maximum X-dimension of a grid.
    maxGridDimY                 INTEGER,                               -- Maximum Y-dimension of a grid.
    maxGridDimZ                 INTEGER,                               -- Maximum Z-dimension of a grid.
    computeMajor                INTEGER,                               -- Major compute capability version number.
    computeMinor                INTEGER,                               -- Minor compute capability version number.
    smMajor                     INTEGER,                               -- Major multiprocessor version number.
    smMinor                     INTEGER                                -- Minor multiprocessor version number.
);
CREATE TABLE TARGET_INFO_CUDA_NULL_STREAM (
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL                     -- Context ID.
);
CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    priority                    INTEGER   NOT NULL,                    -- Priority of the stream.
    flag                        INTEGER   NOT NULL                     -- REFERENCES ENUM_CUPTI_STREAM_TYPE(id)
);
CREATE TABLE EXPORT_META_DATA (
    -- information about nsys export process

    name                        TEXT      NOT NULL,                    -- Name of export meta-data record
    value                       TEXT                                   -- Value of export meta-data record
);
CREATE TABLE ProcessStreams (
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    filenameId                  INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- File name
    contentId                   INTEGER   NOT NULL                     -- REFERENCES StringIds(id) -- Stream content
);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (
    globalVid                   INTEGER,                               -- Serialized GlobalId.
    devStateName                TEXT      NOT NULL,                    -- Device state name.
    name                        TEXT      NOT NULL,                    -- Property name.
    nameEnum                    INTEGER   NOT NULL,                    -- Property enum value.
    value                       TEXT      NOT NULL                     -- Property value.
);
CREATE TABLE PROFILER_OVERHEAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL                     -- Return value of the function call.
);
CREATE TABLE ENUM_NSYS_EVENT_CLASS (
    -- Nsys event class labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (2, 'TRACE_PROCESS_EVENT_GL', 'GL');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (3, 'TRACE_PROCESS_EVENT_TSP_OVERHEAD', 'TSP overhead');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (4, 'TRACE_PROCESS_EVENT_GL_DEBUG', 'GL debug');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (5, 'TRACE_PROCESS_EVENT_GL_WORKLOAD', 'GL workload');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (6, 'TRACE_PROCESS_EVENT_NVTX_START', 'NVTX start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (7, 'TRACE_PROCESS_EVENT_NVTX_FINISH', 'NVTX finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (8, 'TRACE_PROCESS_EVENT_GL_START', 'GL start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (9, 'TRACE_PROCESS_EVENT_GL_FINISH', 'GL finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (10, 'TRACE_PROCESS_EVENT_CUDA_START', 'CUDA start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (11, 'TRACE_PROCESS_EVENT_CUDA_FINISH', 'CUDA finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (12, 'TRACE_PROCESS_EVENT_CUDA_INIT_ERROR', 'CUDA init error');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (13, 'TRACE_PROCESS_EVENT_CUDA_EGL_DRIVER', 'CUDA EGL driver');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (18, 'TRACE_PROCESS_EVENT_VSYNC', 'Vsync');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (26, 'TRACE_PROCESS_EVENT_CUDA_API', 'CUDA API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (27, 'TRACE_PROCESS_EVENT_OS_RUNTIME', 'OSRT runtime');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (28, 'TRACE_PROCESS_EVENT_CUDNN', 'cuDNN');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (29, 'TRACE_PROCESS_EVENT_CUBLAS', 'cuBLAS');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (31, 'TRACE_PROCESS_EVENT_OS_RUNTIME_START', 'OSRT start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (32, 'TRACE_PROCESS_EVENT_OS_RUNTIME_FINISH', 'OSRT finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (33, 'TRACE_PROCESS_EVENT_CUDNN_START', 'cuDNN start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (34, 'TRACE_PROCESS_EVENT_CUDNN_FINISH', 'cuDNN finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (35, 'TRACE_PROCESS_EVENT_CUBLAS_START', 'cuBLAS start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (36, 'TRACE_PROCESS_EVENT_CUBLAS_FINISH', 'cuBLAS finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (37, 'TRACE_PROCESS_EVENT_THREAD_BLOCK', 'Thread block');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (38, 'TRACE_PROCESS_EVENT_NVMEDIA', 'NVmedia');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (39, 'TRACE_PROCESS_EVENT_NVMEDIA_START', 'NVmedia start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (40, 'TRACE_PROCESS_EVENT_NVMEDIA_FINISH', 'NVmedia finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (41, 'TRACE_PROCESS_EVENT_DX12_API', 'DX12 API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (42, 'TRACE_PROCESS_EVENT_DX12_WORKLOAD', 'DX12 workload');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (43, 'TRACE_PROCESS_EVENT_DX12_START', 'DX12 start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (44, 'TRACE_PROCESS_EVENT_DX12_FINISH', 'DX12 finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (45, 'TRACE_PROCESS_EVENT_OPENACC_START', 'OpenACC start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (46, 'TRACE_PROCESS_EVENT_OPENACC_FINISH', 'OpenACC finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (47, 'TRACE_PROCESS_EVENT_OPENACC_INIT_ERROR', 'OpenACC init error');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (48, 'TRACE_PROCESS_EVENT_OPENACC', 'OpenACC');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (49, 'TRACE_PROCESS_EVENT_CPU_FPS', 'CPU FPS');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (50, 'TRACE_PROCESS_EVENT_GPU_FPS', 'GPU FPS');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (51, 'TRACE_PROCESS_EVENT_GL_MULTI_ERROR', 'GL multi-error');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (52, 'TRACE_PROCESS_EVENT_DX12_DISPLAY', 'DX12 display');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (53, 'TRACE_PROCESS_EVENT_VULKAN_API', 'Vulkan API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (54, 'TRACE_PROCESS_EVENT_VULKAN_WORKLOAD', 'Vulkan workload');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (55, 'TRACE_PROCESS_EVENT_VULKAN_START', 'Vulkan start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (56, 'TRACE_PROCESS_EVENT_VULKAN_FINISH', 'Vulkan finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (57, 'TRACE_PROCESS_EVENT_SYSTEM_EVENT', 'System event');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (58, 'TRACE_PROCESS_EVENT_GPU_MEMORY', 'GPU memory');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (59, 'TRACE_PROCESS_EVENT_DX12_CREATE_OBJECT', 'DX12 create object');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (60, 'TRACE_PROCESS_EVENT_VULKAN_CREATE_OBJECT', 'Vulkan create object');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (61, 'TRACE_PROCESS_EVENT_CUSTOM_ETW_TRACE', 'Custom ETW trace');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (62, 'TRACE_PROCESS_EVENT_SLI', 'SLI');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (63, 'TRACE_PROCESS_EVENT_SLI_START', 'SLI start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (64, 'TRACE_PROCESS_EVENT_SLI_FINISH', 'SLI finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (65, 'TRACE_PROCESS_EVENT_DX12_DEBUG_API', 'DX12 debug API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (66, 'TRACE_PROCESS_EVENT_VULKAN_DEBUG_API', 'Vulkan debug API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (67, 'TRACE_PROCESS_EVENT_CUDABACKTRACE', 'CUDA backtrace');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (68, 'TRACE_PROCESS_EVENT_CUDABACKTRACE_START', 'CUDA backtrace start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (69, 'TRACE_PROCESS_EVENT_CUDABACKTRACE_FINISH', 'CUDA backtrace finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (70, 'TRACE_PROCESS_EVENT_WDDM', 'WDDM');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (71, 'TRACE_PROCESS_EVENT_DX11_API', 'DX11 API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (72, 'TRACE_PROCESS_EVENT_DX11_START', 'DX11 start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (73, 'TRACE_PROCESS_EVENT_DX11_FINISH', 'DX11 finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (74, 'TRACE_PROCESS_EVENT_DX11_CREATE_OBJECT', 'DX11 create object');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (75, 'TRACE_PROCESS_EVENT_DX11_DEBUG_API', 'DX11 debug API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (76, 'TRACE_PROCESS_EVENT_DXCOMMON_API', 'DX common API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (77, 'TRACE_PROCESS_EVENT_CUDA_GRAPH_NODE_CREATION', 'CUDA graph node creation');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (78, 'TRACE_PROCESS_EVENT_OPENMP', 'OpenMP');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (79, 'TRACE_PROCESS_EVENT_OPENMP_START', 'OpenMP start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (80, 'TRACE_PROCESS_EVENT_OPENMP_FINISH', 'OpenMP finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (81, 'TRACE_PROCESS_EVENT_NVAPI', 'NV API');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (82, 'TRACE_PROCESS_EVENT_ETWDXGKRNL', 'ETW DXG KRNL');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (83, 'TRACE_PROCESS_EVENT_NVENC', 'NVENC');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (84, 'TRACE_PROCESS_EVENT_NVENC_START', 'NVENC start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (85, 'TRACE_PROCESS_EVENT_NVENC_FINISH', 'NVENC finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (86, 'TRACE_PROCESS_EVENT_NVDEC', 'NVDEC');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (87, 'TRACE_PROCESS_EVENT_NVDEC_START', 'NVDEC start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (88, 'TRACE_PROCESS_EVENT_NVDEC_FINISH', 'NVDEC finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (89, 'TRACE_PROCESS_EVENT_NVJPEG', 'nvJPEG');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (90, 'TRACE_PROCESS_EVENT_NVJPEG_START', 'nvJPEG start');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (91, 'TRACE_PROCESS_EVENT_NVJPEG_FINISH', 'nvJPEG finish');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (92, 'TRACE_PROCESS_EVENT_DX12_BATCH_WORKLOAD', 'DX12 batch workload');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (93, 'TRACE_PROCESS_EVENT_VULKAN_BATCH_WORKLOAD', 'Vulkan batch workload');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (94, 'TRACE_PROCESS_EVENT_CUDA_GRAPHEXEC_CREATION', 'CUDA graph exec creation');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (95, 'TRACE_PROCESS_EVENT_CUDA_GRAPH_CREATION', 'CUDA graph creation');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (96, 'TRACE_PROCESS_EVENT_CUDA_GRAPH_CLONE', 'CUDA graph clone');
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (
    -- CUDA memcpy operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (12, 'CUDA_MEMCPY_KIND_UVM_DTOH', 'Unified Device-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (13, 'CUDA_MEMCPY_KIND_UVM_DTOD', 'Unified Device-to-Device');
CREATE TABLE ENUM_CUDA_MEM_KIND (
    -- CUDA memory kind labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (
    -- CUPTI synchronization type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync');
