import CLanes
import Foundation

/// Which build of recbench's own hot kernels runs (OpenBLAS picks its own; records name
/// both). The package is compiled for baseline x86-64; a few kernels also have an AVX2 +
/// FMA build, chosen once at start when the CPU has it. FMA rounds once where the baseline
/// rounds twice, so metrics can differ in the last digits between the two sets, as they do
/// between OpenBLAS kernel sets; `RECBENCH_KERNELS=baseline` forces the baseline one.
public enum KernelSet: String, Sendable {
    case baseline
    case avx2 = "avx2+fma"

    /// The set this process uses (read once; the environment can only lower it).
    public static let current: KernelSet = {
        if ProcessInfo.processInfo.environment["RECBENCH_KERNELS"] == "baseline" { return .baseline }
        return available.last!
    }()

    /// The sets this CPU runs, baseline first.
    public static let available: [KernelSet] = recbench_cpu_has_avx2_fma() != 0 ? [.baseline, .avx2] : [.baseline]
}
