import Yams
import RecBenchSupport

/// A config value as written in YAML: scalars, lists and string-keyed maps.
public enum ConfigValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case list([ConfigValue])
    case map([String: ConfigValue])

    /// The value as a Double, for ints and doubles.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The value as an Int, for ints and integral doubles.
    public var intValue: Int? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: return Int(d)
        default: return nil
        }
    }

    /// The value as a String, for strings only.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Flow-style YAML text (also valid JSON for maps and lists of scalars).
    public var description: String {
        switch self {
        case .null: return "~"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : (d > 0 ? ".inf" : (d < 0 ? "-.inf" : ".nan"))
        case .string(let s): return Self.quoteIfNeeded(s)
        case .list(let l): return "[" + l.map(\.description).joined(separator: ", ") + "]"
        case .map(let m):
            return "{" + m.keys.sorted().map { "\(Self.quoteIfNeeded($0)): \(m[$0]!)" }.joined(separator: ", ") + "}"
        }
    }

    private static func quoteIfNeeded(_ s: String) -> String {
        let plain = !s.isEmpty && s.allSatisfy { $0.isLetter || $0.isNumber || "_-./@".contains($0) }
            && Double(s) == nil && !["true", "false", "null", "~", "yes", "no"].contains(s.lowercased())
        if plain { return s }
        var escaped = ""
        for ch in s.unicodeScalars {
            switch ch {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\t": escaped += "\\t"
            case "\r": escaped += "\\r"
            default: escaped.unicodeScalars.append(ch)
            }
        }
        return "\"" + escaped + "\""
    }

    /// Converts a Yams node, resolving scalars by YAML 1.1 core rules (as PyYAML, and so
    /// RecBole, does): `~`/`null` → null, `true`/`false` → bool, ints, floats, `.inf`.
    /// Values a config document may expand to. A YAML alias repeats its anchor's whole
    /// subtree, so a few hundred bytes of nested aliases ("billion laughs") would otherwise
    /// expand without bound; RecBole configs hold a few hundred values.
    static let expansionLimit = 100_000

    /// Thrown when a document expands past `expansionLimit` values.
    struct TooLarge: Error {}

    /// Converts `node`, spending one unit of `budget` per value.
    init(node: Node, budget: inout Int) throws {
        budget -= 1
        guard budget >= 0 else { throw TooLarge() }
        switch node {
        case .scalar(let scalar):
            if scalar.style != .plain { self = .string(scalar.string); return }
            self = ConfigValue.parsePlainScalar(scalar.string)
        case .sequence(let seq):
            var items: [ConfigValue] = []
            for element in seq { items.append(try ConfigValue(node: element, budget: &budget)) }
            self = .list(items)
        case .mapping(let mapping):
            var m: [String: ConfigValue] = [:]
            for (k, v) in mapping { m[k.string ?? "\(k)"] = try ConfigValue(node: v, budget: &budget) }
            self = .map(m)
        case .alias:
            self = .null
        }
    }

    /// Resolves an unquoted YAML scalar.
    static func parsePlainScalar(_ text: String) -> ConfigValue {
        let t = text.trimmingCharacters(in: .whitespaces)
        switch t.lowercased() {
        case "", "~", "null": return .null
        case "true", "yes", "on": return .bool(true)
        case "false", "no", "off": return .bool(false)
        case ".inf", "+.inf", "inf": return .double(.infinity)
        case "-.inf", "-inf": return .double(-.infinity)
        default: break
        }
        if let i = Int(t) { return .int(i) }
        if t.contains(where: { $0.isNumber }), let d = Double(t) { return .double(d) }
        return .string(text)
    }

    /// Parses YAML text (a document or a flow value such as `[10, 20]`).
    public static func parse(yaml text: String) throws -> ConfigValue {
        guard let node = try Yams.compose(yaml: text) else { return .null }
        var budget = expansionLimit
        do { return try ConfigValue(node: node, budget: &budget) } catch is TooLarge {
            throw RecBenchError("YAML value expands to more than \(expansionLimit) values (nested aliases?)")
        }
    }
}

import Foundation
