import Foundation
import Logging

/// The only place that writes to the terminal's stderr; stdout carries results only.
enum Terminal {
    /// Whether stdout is a terminal (progress decorations only then).
    static let stdoutIsTTY = isatty(STDOUT_FILENO) == 1
    /// Whether stderr is a terminal.
    static let stderrIsTTY = isatty(STDERR_FILENO) == 1

    /// "████░░░░ 7/20  ": a progress bar with its count, the prefix of progress lines on a TTY.
    static func bar(_ done: Int, of total: Int, width: Int = 20) -> String {
        let filled = total <= 0 ? width : width * min(done, total) / total
        return String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled) + " \(done)/\(total)  "
    }

    static func error(_ message: String) { writeError("recbench: error: \(message)\n") }

    static func writeError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Prints a line of results to stdout.
    /// Flushed at once, so a log file shows it in order with the stderr lines.
    static func out(_ line: String = "") {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// swift-log handler: one short line per message on stderr ("warning: …").
struct TerminalLogHandler: LogHandler {
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let prefix: String
        switch event.level {
        case .warning: prefix = "warning: "
        case .error, .critical: prefix = "error: "
        case .notice: prefix = "note: "
        default: prefix = ""
        }
        Terminal.writeError("recbench: \(prefix)\(event.message)\n")
    }
}
