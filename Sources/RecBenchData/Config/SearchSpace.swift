import Foundation
import RecBenchSupport

/// How one hyperparameter is drawn in a search: RecBole's hyper-parameter types, with
/// hyperopt's meaning (`loguniform` bounds are natural logs: `loguniform -8,0` draws
/// exp(U(−8, 0)), from 3.4e-4 to 1).
public enum SearchDistribution: Sendable, Equatable, CustomStringConvertible {
    /// One of the listed values, each equally likely a priori.
    case choice([ConfigValue])
    /// U(low, high).
    case uniform(low: Double, high: Double)
    /// round(U(low, high) / q) · q.
    case quniform(low: Double, high: Double, q: Double)
    /// exp(U(low, high)).
    case loguniform(low: Double, high: Double)

    /// The type names RecBole's files use.
    public static let typeNames = ["choice", "uniform", "quniform", "loguniform"]

    /// RecBole's line format without the name: `loguniform -8,0`, `choice [64,96,128]`.
    public var description: String {
        func n(_ x: Double) -> String { ConfigValue.double(x).description }
        switch self {
        case .choice(let values): return "choice \(ConfigValue.list(values))".replacingOccurrences(of: ", ", with: ",")
        case .uniform(let low, let high): return "uniform \(n(low)),\(n(high))"
        case .quniform(let low, let high, let q): return "quniform \(n(low)),\(n(high)),\(n(q))"
        case .loguniform(let low, let high): return "loguniform \(n(low)),\(n(high))"
        }
    }

    /// A distribution of RecBole type `type` from its arguments: the list of values for
    /// `choice`, the bounds (and step) otherwise; checks them, naming what is wrong.
    public static func make(type: String, arguments: ConfigValue) throws(SpaceProblem) -> SearchDistribution {
        guard typeNames.contains(type) else {
            throw SpaceProblem("unknown type '\(type)'\(Suggestion.hint(for: type, in: typeNames)); expected \(typeNames.joined(separator: ", "))")
        }
        if type == "choice" {
            guard case .list(let values) = arguments else { throw SpaceProblem("choice takes a list such as [64,96,128], got \(arguments)") }
            guard !values.isEmpty else { throw SpaceProblem("choice [] has nothing to choose from") }
            return .choice(values)
        }
        let count = type == "quniform" ? 3 : 2
        let shape = type == "quniform" ? "low,high,q" : "low,high"
        guard case .list(let items) = arguments, items.count == count, case let numbers = items.compactMap(\.doubleValue),
              numbers.count == count, numbers.allSatisfy(\.isFinite) else {
            throw SpaceProblem("\(type) takes \(count) finite numbers \(shape), got \(arguments)")
        }
        guard numbers[0] <= numbers[1] else {
            throw SpaceProblem("\(type) has low \(numbers[0]) > high \(numbers[1])\(type == "loguniform" ? " (the bounds are natural logs)" : "")")
        }
        if type == "loguniform", !exp(numbers[1]).isFinite || exp(numbers[0]) == 0 {
            throw SpaceProblem("loguniform's bounds are natural logs: exp(\(numbers[0]))…exp(\(numbers[1])) leaves the numbers a run can take "
                               + "(for 1e-4…1000 write loguniform -9.21,6.91)")
        }
        switch type {
        case "uniform": return .uniform(low: numbers[0], high: numbers[1])
        case "loguniform": return .loguniform(low: numbers[0], high: numbers[1])
        default:
            guard numbers[2] > 0 else { throw SpaceProblem("quniform's step q must be > 0, got \(numbers[2])") }
            return .quniform(low: numbers[0], high: numbers[1], q: numbers[2])
        }
    }
}

/// What is wrong with one entry of a space (the caller adds the file and line).
public struct SpaceProblem: Error, Sendable {
    public let message: String
    init(_ message: String) { self.message = message }
}

/// One searched hyperparameter.
public struct SearchDimension: Sendable, Equatable {
    /// The config key it sets.
    public let name: String
    public let distribution: SearchDistribution
    /// Where the space file declares it (for errors).
    public var line: Int? = nil

    /// A dimension.
    public init(_ name: String, _ distribution: SearchDistribution, line: Int? = nil) {
        self.name = name; self.distribution = distribution; self.line = line
    }
}

/// The hyperparameters a search draws, in the order the space declares them. Read from
/// RecBole's hyper-parameter file as is (`name type value` lines, `#` comments), or from
/// YAML in RecBole's dict form (`{loguniform: {learning_rate: [-8, 0]}, choice: {…}}`).
public struct SearchSpace: Sendable, Equatable, CustomStringConvertible {
    public let dimensions: [SearchDimension]
    /// The file it was read from ("" for a model's declared space).
    public var source = ""

    /// A space of `dimensions` (names distinct).
    public init(_ dimensions: [SearchDimension], source: String = "") { self.dimensions = dimensions; self.source = source }

    /// RecBole's line format, one dimension per line.
    public var description: String { dimensions.map { "\($0.name) \($0.distribution)" }.joined(separator: "\n") }

    /// Reads the space file at `path`.
    public static func file(_ path: String) throws -> SearchSpace {
        guard let data = FileManager.default.contents(atPath: path) else { throw RecBenchError.file(path, "search space file not found") }
        guard let text = String(data: data, encoding: .utf8) else { throw RecBenchError.file(path, "search space file is not valid UTF-8") }
        return try parse(text, source: path)
    }

    /// Parses a space in either format: YAML when the text is a map whose keys are RecBole's
    /// type names, RecBole's line format otherwise.
    public static func parse(_ text: String, source: String) throws -> SearchSpace {
        if let layer = try? ConfigLayer.yaml(text, source: source), !layer.values.isEmpty,
           layer.values.keys.allSatisfy(SearchDistribution.typeNames.contains) {
            return try yaml(layer, source: source)
        }
        return try lines(text, source: source)
    }

    static func lines(_ text: String, source: String) throws -> SearchSpace {
        var dimensions: [SearchDimension] = [], seen: [String: Int] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines), number = index + 1
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fail = { (message: String) in RecBenchError.file(source, line: number, message) }
            let tokens = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard tokens.count >= 3, SearchDistribution.typeNames.contains(tokens[1]) else {
                let hint = tokens.count >= 3 ? Suggestion.hint(for: tokens[1], in: SearchDistribution.typeNames) : ""
                throw fail("expected `name type value` (type: \(SearchDistribution.typeNames.joined(separator: ", "))\(hint)), e.g. "
                           + "`learning_rate loguniform -8,0`, or a YAML map of type → {name: value}; got '\(line)'")
            }
            // RecBole joins the rest of the line without its spaces.
            let valueText = tokens[2...].joined(), name = tokens[0]
            let arguments: ConfigValue
            if tokens[1] == "choice" {
                guard let parsed = try? ConfigValue.parse(yaml: valueText) else { throw fail("choice value '\(valueText)' is not a list") }
                arguments = parsed
            } else {
                arguments = .list(valueText.split(separator: ",", omittingEmptySubsequences: false).map {
                    Double($0).map(ConfigValue.double) ?? .string(String($0))
                })
            }
            if let first = seen[name] { throw RecBenchError.file(source, line: number, field: name, "is searched twice (first on line \(first))") }
            do { dimensions.append(SearchDimension(name, try SearchDistribution.make(type: tokens[1], arguments: arguments), line: number)) } catch {
                throw RecBenchError.file(source, line: number, field: name, error.message)
            }
            seen[name] = number
        }
        guard !dimensions.isEmpty else { throw RecBenchError.file(source, "the search space names no hyperparameter") }
        return SearchSpace(dimensions, source: source)
    }

    static func yaml(_ layer: ConfigLayer, source: String) throws -> SearchSpace {
        var dimensions: [SearchDimension] = []
        for type in layer.values.keys.sorted(by: { layer.lines[$0] ?? 0 < layer.lines[$1] ?? 0 }) {
            let line = layer.lines[type]
            guard case .map(let entries) = layer.values[type]! else {
                throw RecBenchError.file(source, line: line, field: type, "expected a map of name → value, e.g. {learning_rate: [-8, 0]}")
            }
            for name in entries.keys.sorted() {
                if dimensions.contains(where: { $0.name == name }) {
                    throw RecBenchError.file(source, line: line, field: name, "is searched twice")
                }
                do { dimensions.append(SearchDimension(name, try SearchDistribution.make(type: type, arguments: entries[name]!), line: line)) } catch {
                    throw RecBenchError.file(source, line: line, field: name, error.message)
                }
            }
        }
        return SearchSpace(dimensions, source: source)
    }
}
