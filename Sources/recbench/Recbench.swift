import ArgumentParser
import Logging
import RecBenchCore

@main
struct Recbench: ParsableCommand {
    static func main() {
        // Training allocates many same-sized multi-megabyte matrices per step. glibc would
        // hand freed ones back to the kernel and fault them in again (12 % of a MultiDAE
        // run); keep them in the process instead.
        _ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 512 << 20)
        _ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, 1 << 30)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "recbench",
        abstract: "Benchmark recommender models on your interaction data with one fair protocol.",
        discussion: """
            Loads RecBole atomic files, splits each user's history, fits a model, ranks every \
            item for every user and reports Recall, MRR, NDCG, Hit, Precision, MAP @K.
            """,
        version: recbenchVersion,
        subcommands: [Run.self, Sweep.self, ReportCommand.self, Convert.self, Sample.self, Models.self, Bench.self])
}

/// Options every command that logs shares.
struct LoggingOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Print informational messages (filtering, timings) on stderr.")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Print only warnings and errors on stderr.")
    var quiet = false

    /// A logger that writes one line per message to stderr.
    func makeLogger() -> Logger {
        var logger = Logger(label: "recbench") { _ in TerminalLogHandler() }
        logger.logLevel = verbose ? .info : (quiet ? .warning : .notice)
        return logger
    }
}

/// Runs `body`, turning user errors into one line on stderr and exit code 1.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as RecBenchError {
        Terminal.error("\(error)")
        throw ExitCode(1)
    } catch let error as LinalgError {
        Terminal.error("\(error)")
        throw ExitCode(1)
    }
}

/// glibc's `mallopt` (declared in malloc.h, which Swift's Glibc module does not export).
@_silgen_name("mallopt")
func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
