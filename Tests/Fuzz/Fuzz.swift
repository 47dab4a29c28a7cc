import Foundation
import RecBenchCore

/// libFuzzer targets for recbench's readers of untrusted input. Built with
/// `scripts/fuzz.sh` (`-sanitize=fuzzer,address -DFUZZING`), libFuzzer drives
/// `LLVMFuzzerTestOneInput`; built plainly (as `swift build` does), the binary replays
/// files instead: `recbench-fuzz TARGET FILE…` runs each through the target once, which is
/// how a crasher is reproduced under a debugger. A thrown `RecBenchError` is the expected
/// answer to bad input; only a crash, a hang or a sanitizer report is a finding.
enum FuzzTarget: String, CaseIterable {
    /// The atomic-file parser (`.inter` / `.item` / `.user`), every column type.
    case atomic
    /// The CSV reader of `convert`, with timestamp parsing of every field.
    case csv
    /// The YAML config loader and every typed settings reader on top of it.
    case config

    /// Runs one input; errors are answers, not findings.
    func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        switch self {
        case .atomic:
            _ = try? AtomicFileReader.parse(bytes, path: "fuzz.inter", fieldSeparator: [0x09], sequenceSeparator: " ", wanted: nil)
        case .csv:
            let path = NSTemporaryDirectory() + "recbench-fuzz-\(getpid()).csv"
            guard FileManager.default.createFile(atPath: path, contents: Data(buffer: bytes)) else { return }
            defer { unlink(path) }
            guard var reader = try? CSVReader(path: path) else { return }
            while let record = try? reader.next() { for field in record.fields { _ = Timestamp.seconds(field) } }
        case .config:
            guard let text = String(validating: bytes, as: UTF8.self),
                  let layer = try? ConfigLayer.yaml(text, source: "fuzz.yml"),
                  let config = try? Config(layers: [layer], modelKeys: ModelRegistry.parameterNames) else { return }
            _ = try? DataSettings(config)
            _ = try? SplitSettings(config)
            _ = try? EvaluationSettings(config)
            _ = try? TrainingSettings(config)
        }
    }

    /// The target named by `RECBENCH_FUZZ_TARGET` (libFuzzer owns the command line).
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["RECBENCH_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("set RECBENCH_FUZZ_TARGET to one of: \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return target
    }()
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.selected.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's entry point for programs that keep their own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func fuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links an executable's `main` to `<module>_main`; here that hands over to libFuzzer.
@_cdecl("recbench_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc, arguments = argv
    return fuzzerRunDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}
#else
@main struct Replay {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            print("usage: recbench-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) FILE…")
            return
        }
        for path in arguments.dropFirst() {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            data.withUnsafeBytes { target.run($0.bindMemory(to: UInt8.self)) }
            print("\(path): ok")
        }
    }
}
#endif
