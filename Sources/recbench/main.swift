import Glibc
import RecBenchCLI

// A file-size limit (`ulimit -f`) would kill the process with SIGXFSZ in the middle of a
// write; ignored, the write fails with EFBIG and recbench reports it like a full disk.
_ = signal(SIGXFSZ, SIG_IGN)

// Training allocates many multi-megabyte matrices per step. glibc would hand freed ones
// back to the kernel and fault them in again (12 % of a MultiDAE run; a SASRec epoch on
// ml-100k spent 80 s of system time so while its heap topped 2 GiB); keep them in the
// process instead: no mmap below 512 MiB, no trimming at all.
_ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 512 << 20)
_ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, -1)   // -1: never trim
Recbench.main()

/// glibc's `mallopt` (declared in malloc.h, which Swift's Glibc module does not export).
@_silgen_name("mallopt")
func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
