import Glibc
import RecBenchCLI

// A file-size limit (`ulimit -f`) would kill the process with SIGXFSZ in the middle of a
// write; ignored, the write fails with EFBIG and recbench reports it like a full disk.
_ = signal(SIGXFSZ, SIG_IGN)

// Training allocates many same-sized multi-megabyte matrices per step. glibc would hand
// freed ones back to the kernel and fault them in again (12 % of a MultiDAE run); keep
// them in the process instead.
_ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 512 << 20)
_ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, Int32.max)
Recbench.main()

/// glibc's `mallopt` (declared in malloc.h, which Swift's Glibc module does not export).
@_silgen_name("mallopt")
func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
