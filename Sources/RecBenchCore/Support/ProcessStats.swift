import Foundation

/// Facts about this process, for result records.
public enum ProcessStats {
    /// Peak resident set size (VmHWM) in MiB, or 0 where /proc is unavailable.
    public static var peakMemoryMiB: Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
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
