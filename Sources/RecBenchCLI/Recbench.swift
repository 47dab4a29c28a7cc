import ArgumentParser
import Logging
import RecBenchCore
import RecBenchBench
import Linalg

/// The `recbench` command and its subcommands (the executable's `main` runs it).
public struct Recbench: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "recbench",
        abstract: "Benchmark recommender models on your interaction data with one fair protocol.",
        discussion: """
            Loads RecBole atomic files, splits each user's history, fits a model, ranks every \
            item for every user and reports \(MetricRegistry.names.filter { $0 != GAUC.name }.joined(separator: ", ")) @K, and \(GAUC.name).
            """,
        version: recbenchVersion,
        subcommands: [Run.self, Tune.self, Sweep.self, ReportCommand.self, Convert.self, Sample.self, Models.self, Keys.self, Bench.self])
}

/// Options every command that logs shares.
public struct LoggingOptions: ParsableArguments {
    public init() {}

    @Flag(name: .shortAndLong, help: "Print informational messages (filtering, timings) on stderr.")
    public var verbose = false

    @Flag(name: .shortAndLong, help: "Print only errors and the final table (warnings stay in the result record).")
    public var quiet = false

    /// A logger that writes one line per message to stderr.
    func makeLogger() -> Logger {
        var logger = Logger(label: "recbench") { _ in TerminalLogHandler() }
        logger.logLevel = verbose ? .info : (quiet ? .error : .notice)
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
