import Foundation

/// Facts about this process, for result records.
public enum ProcessStats {
    /// Peak resident set size (VmHWM) in MiB, or 0 where /proc is unavailable.
    public static var peakMemoryMiB: Double { statusMiB("VmHWM:") }

    /// Resident set size now (VmRSS) in MiB, or 0 where /proc is unavailable.
    public static var residentMemoryMiB: Double { statusMiB("VmRSS:") }

    /// Sets the peak (VmHWM) back to what is resident now, so the next peak measures one
    /// step (Linux: writing 5 to /proc/self/clear_refs). False where that is refused.
    /// A benchmark's own measurement only: a run's recorded peak must cover the whole run.
    /// Free heap pages go back to the system first (glibc's malloc_trim), so that what
    /// the step allocates shows as new resident pages rather than reusing freed ones.
    @discardableResult
    public static func resetPeakMemory() -> Bool {
        _ = glibcMallocTrim(0)
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return write(fd, "5", 1) == 1
    }

    private static func statusMiB(_ field: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            let kb = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kb / 1024
        }
        return 0
    }

    /// The memory this process may use, in bytes: the machine's physical memory, or the
    /// cgroup (v2) limit of its container when that is lower.
    public static var availableMemoryBytes: Double {
        var bytes = Double(ProcessInfo.processInfo.physicalMemory)
        if let text = try? String(contentsOfFile: "/sys/fs/cgroup/memory.max", encoding: .utf8),
           let limit = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)), limit > 0 {
            bytes = min(bytes, limit)
        }
        return bytes
    }
}

/// glibc's `malloc_trim` (declared in malloc.h, which Swift's Glibc module does not export).
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
