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
// A run a sweep or a benchmark started ends with it: killed alone (`kill`, a job scheduler's
// timeout), the parent would leave its child running to completion. The kernel kills this
// process when the parent dies (SIGKILL: an inherited ignored SIGTERM cannot keep it alive;
// results are written atomically, so nothing half-written is left); a parent already gone
// before that was set is checked after.
if let parent = getenv("RECBENCH_PARENT_PID").flatMap({ Int32(String(cString: $0)) }) {
    unsetenv("RECBENCH_PARENT_PID")   // for this process only: its own children are told by ChildProcess
    _ = glibcPrctl(1 /* PR_SET_PDEATHSIG */, UInt(SIGKILL))
    if getppid() != parent {
        _ = "recbench: the sweep or bench that started this run has ended; stopping\n".withCString { write(2, $0, strlen($0)) }
        exit(128 + SIGKILL)
    }
}
Recbench.main()

/// glibc's `mallopt` (declared in malloc.h, which Swift's Glibc module does not export).
@_silgen_name("mallopt")
func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32

/// glibc's `prctl` (variadic in C; here with the one argument PR_SET_PDEATHSIG takes: on x86-64 and
/// arm64 Linux both travel in integer registers as a variadic call's would, and the kernel ignores the rest).
@_silgen_name("prctl")
func glibcPrctl(_ option: Int32, _ argument: UInt) -> Int32
