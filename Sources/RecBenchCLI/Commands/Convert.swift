import ArgumentParser
import Foundation
import RecBenchCore

public struct Convert: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "Convert CSV exports (interactions, items, users) into RecBole atomic files.",
        discussion: """
            Each CSV needs a header row; any delimiter (detected: , tab ; |), quoted fields and \
            UTF-8 text are fine. Column types are inferred and reported: id columns (user_id, \
            item_id) and integers → token, decimal numbers → float, other text → token; the \
            time column (--time-field) becomes float, with dates such as 2024-04-01 09:30:00 \
            converted to Unix seconds (UTC). Override with --field, e.g. --field price:float, \
            --field genres:token_seq, or rename with --field uid=user_id. Values holding a tab \
            or line break are rejected (atomic files cannot hold them). Files stream through \
            in constant memory; output appears only when every file converted.
            """)

    @Option(help: "The interaction CSV (user, item, time, …).")
    public var inter: String?

    @Option(help: "The item CSV (item_id, features…).")
    public var item: String?

    @Option(help: "The user CSV (user_id, features…).")
    public var user: String?

    @Option(help: "Dataset name: output files are <out>/<name>.inter etc.")
    public var name: String?

    @Option(help: "Output folder (default: Datasets/<name>).")
    public var out: String?

    @Option(help: ArgumentHelp("Column mapping [csv=]name[:type]; repeat for several.", valueName: "mapping"))
    public var field: [String] = []

    @Option(help: "CSV delimiter (default: detected per file). Use \\t for tab.")
    public var delimiter: String?

    @Option(help: "The column holding times (default: timestamp, when the interaction CSV has it).")
    public var timeField: String?

    @Option(help: "A YAML spec with keys name, out, inter, item, user, fields, delimiter, time_field (command-line options win).")
    public var spec: String?

    @Flag(help: "Replace existing output files.")
    public var force = false

    public func run() throws {
        try reportingErrors {
            var values: [String: ConfigValue] = [:]
            if let spec {
                let layer = try ConfigLayer.file(spec)
                values = try checkedSpec(layer, path: spec)
            }
            func value(_ option: String?, _ key: String) -> String? { option ?? values[key]?.stringValue }
            guard let name = value(name, "name") else { throw RecBenchError(field: "--name", "a dataset name is required") }
            var inputs: [String: String] = [:]
            for (suffix, path) in [("inter", value(inter, "inter")), ("item", value(item, "item")), ("user", value(user, "user"))] {
                if let path { inputs[suffix] = path }
            }
            var fields = field
            if case .list(let list)? = values["fields"] { fields = list.compactMap(\.stringValue) + fields }
            var delimiterByte: UInt8?
            if let d = value(delimiter, "delimiter") {
                let text = d == "\\t" || d == "tab" ? "\t" : d
                guard text.utf8.count == 1 else { throw RecBenchError(field: "--delimiter", "must be one character, got '\(d)'") }
                delimiterByte = text.utf8.first
            }
            var conversion = ConversionSpec(
                name: name, outputDirectory: value(out, "out") ?? "Datasets/\(name)", inputs: inputs, fields: fields,
                delimiter: delimiterByte, timeField: timeField ?? values["time_field"]?.stringValue ?? "timestamp", overwrite: force)
            conversion.timeFieldRequired = timeField != nil || values["time_field"] != nil
            let report = try CSVConverter.convert(conversion)
            for file in report.files {
                Terminal.out("\(file.output)  ← \(file.input)  (\(file.rows) rows)")
                for c in file.columns {
                    let rename = c.source == c.name ? "" : " (from \(c.source))"
                    Terminal.out("    \(c.name):\(c.type.rawValue)".padding(toLength: 34, withPad: " ", startingAt: 0) + "\(c.reason)\(rename)")
                }
            }
        }
    }

    /// The spec's values, each of the type its key needs (a key of the wrong type would
    /// otherwise be passed over, and the command line's default taken in silence).
    func checkedSpec(_ layer: ConfigLayer, path: String) throws -> [String: ConfigValue] {
        let known = ["name", "out", "inter", "item", "user", "fields", "delimiter", "time_field"]
        for (key, value) in layer.values {
            let place = "\(path):\(layer.lines[key] ?? 0)"
            guard known.contains(key) else { throw RecBenchError(location: place, field: key, "unknown spec key\(Suggestion.hint(for: key, in: known))") }
            if key == "fields" {
                guard case .list(let items) = value, items.allSatisfy({ $0.stringValue != nil }) else {
                    throw RecBenchError(location: place, field: key, "must be a list of mappings such as [uid=user_id, price:float], got \(value)")
                }
            } else if case .string = value {
                continue
            } else {
                throw RecBenchError(location: place, field: key, "must be text, got \(value) (quote it in the YAML)")
            }
        }
        return layer.values
    }
}
