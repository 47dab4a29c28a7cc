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
        // Plain only where RecBole's loader would read the text back as this string.
        let plain = !s.isEmpty && s.allSatisfy { $0.isLetter || $0.isNumber || "_-./@".contains($0) } && parsePlainScalar(s) == .string(s)
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

    /// Thrown for an explicit tag RecBole's loader would read as no config value recbench has
    /// (`!!binary`, `!!timestamp`, `!!set`, a local `!tag`) or a tagged text it refuses (`!!int abc`).
    struct UnreadableTag: Error {
        let message: String
        let line: Int?
    }

    /// Converts `node`, spending one unit of `budget` per value.
    init(node: Node, budget: inout Int) throws {
        budget -= 1
        guard budget >= 0 else { throw TooLarge() }
        switch node {
        case .scalar(let scalar):
            self = try ConfigValue.scalar(scalar)
        case .sequence(let seq):
            guard Self.listTags.contains(seq.tag.rawValue) else {
                throw UnreadableTag(message: "the tag \(seq.tag.rawValue) is not supported on a list", line: seq.mark?.line)
            }
            var items: [ConfigValue] = []
            for element in seq { items.append(try ConfigValue(node: element, budget: &budget)) }
            self = .list(items)
        case .mapping(let mapping):
            guard Self.mapTags.contains(mapping.tag.rawValue) else {
                throw UnreadableTag(message: "the tag \(mapping.tag.rawValue) is not supported on a map", line: mapping.mark?.line)
            }
            var m: [String: ConfigValue] = [:]
            for (k, v) in mapping { m[try Self.key(k)] = try ConfigValue(node: v, budget: &budget) }
            self = .map(m)
        case .alias:
            self = .null
        }
    }

    /// A mapping key's text, held to its tag as PyYAML's constructor holds it (`!!str epochs` is
    /// `epochs`; `!!bool epochs` is refused where PyYAML raises); a list or a map as a key
    /// (unhashable to PyYAML) is refused rather than skipped.
    static func key(_ node: Node) throws -> String {
        guard case .scalar(let scalar) = node else {
            throw UnreadableTag(message: "a list or a map cannot be a key (keys are text)", line: node.mark?.line)
        }
        _ = try ConfigValue.scalar(scalar)
        return scalar.string
    }

    /// A scalar as PyYAML constructs it: untagged by the resolvers below when plain, text when
    /// quoted; the non-specific `!` always by the resolvers (PyYAML's parser marks it implicit);
    /// an explicit `!!str`, `!!int`, `!!float`, `!!bool` or `!!null` (or FullLoader's `!!python/`
    /// names for them) by that type's constructor: `!!str 017` is text, `!!int "017"` is 15.
    static func scalar(_ scalar: Node.Scalar) throws -> ConfigValue {
        let text = scalar.string
        func refuse(_ what: String) -> UnreadableTag { UnreadableTag(message: what, line: scalar.mark?.line) }
        let name = Tag.Name(rawValue: scalar.tag.rawValue)
        switch pythonTags[name] ?? name {
        case .implicit: return scalar.style == .plain ? parsePlainScalar(text) : .string(text)
        case .nonSpecific: return parsePlainScalar(text)
        case .str: return .string(text)
        case .null: return .null
        case .bool:
            let truth = ["yes": true, "true": true, "on": true, "no": false, "false": false, "off": false]
            guard let value = truth[text.lowercased()] else { throw refuse("'\(text)' is no !!bool (yes/no, true/false, on/off)") }
            return .bool(value)
        case .int:
            guard let value = constructInt(text) else { throw refuse("'\(text)' is no !!int") }
            return .int(value)
        case .float:
            guard let value = constructFloat(text) else { throw refuse("'\(text)' is no !!float") }
            return .double(value)
        default:
            throw refuse("the tag \(scalar.tag.rawValue) is not supported (a config value is text, a number, a bool or null)")
        }
    }

    /// Tags a list or a map may carry (FullLoader builds a list from `!!python/tuple` too).
    static let listTags: Set<String> = Set([Tag.Name.implicit, .nonSpecific, .seq, "tag:yaml.org,2002:python/tuple",
                                            "tag:yaml.org,2002:python/list"].map(\.rawValue))
    static let mapTags: Set<String> = Set([Tag.Name.implicit, .nonSpecific, .map, "tag:yaml.org,2002:python/dict"].map(\.rawValue))

    /// FullLoader's `!!python/` scalar tags that construct the plain types.
    static let pythonTags: [Tag.Name: Tag.Name] = [
        "tag:yaml.org,2002:python/none": .null, "tag:yaml.org,2002:python/bool": .bool, "tag:yaml.org,2002:python/str": .str,
        "tag:yaml.org,2002:python/unicode": .str, "tag:yaml.org,2002:python/int": .int, "tag:yaml.org,2002:python/long": .int,
        "tag:yaml.org,2002:python/float": .float,
    ]

    /// PyYAML's `construct_yaml_int` (no pattern: an explicit tag skips the resolver): `_`
    /// removed, a sign, then `0b`, `0x`, a leading 0 (octal, `0o` allowed), base 60, or Python's `int`.
    static func constructInt(_ raw: String) -> Int? {
        var v = Substring(raw.replacingOccurrences(of: "_", with: ""))
        guard let first = v.first else { return nil }
        let sign = first == "-" ? -1 : 1
        if first == "-" || first == "+" { v = v.dropFirst() }
        func python(_ s: Substring, _ radix: Int) -> Int? { Int(s.trimmingCharacters(in: .whitespacesAndNewlines), radix: radix) }
        if v == "0" { return 0 }
        if v.hasPrefix("0b") { return python(v.dropFirst(2), 2).map { sign * $0 } }
        if v.hasPrefix("0x") { return python(v.dropFirst(2), 16).map { sign * $0 } }
        if v.first == "0" { return python(v.hasPrefix("0o") || v.hasPrefix("0O") ? v.dropFirst(2) : v, 8).map { sign * $0 } }
        if v.contains(":") {
            let digits = v.split(separator: ":", omittingEmptySubsequences: false).map { python($0, 10) }
            guard digits.allSatisfy({ $0 != nil }) else { return nil }
            return sign * digits.reduce(0) { $0 * 60 + $1! }
        }
        return python(v, 10).map { sign * $0 }
    }

    /// PyYAML's `construct_yaml_float`: `_` removed, lower case, a sign, `.inf`, `.nan`, base 60,
    /// or Python's `float` (decimal only: Swift's parser also reads hex, which Python refuses).
    static func constructFloat(_ raw: String) -> Double? {
        var v = Substring(raw.replacingOccurrences(of: "_", with: "").lowercased())
        guard let first = v.first else { return nil }
        let sign: Double = first == "-" ? -1 : 1
        if first == "-" || first == "+" { v = v.dropFirst() }
        func python(_ s: Substring) -> Double? {
            let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
            return t.contains("x") ? nil : Double(t)
        }
        if v == ".inf" { return sign * .infinity }
        if v == ".nan" { return .nan }
        if v.contains(":") {
            let digits = v.split(separator: ":", omittingEmptySubsequences: false).map(python)
            guard digits.allSatisfy({ $0 != nil }) else { return nil }
            return sign * digits.reduce(0) { $0 * 60 + $1! }
        }
        return python(v).map { sign * $0 }
    }

    /// Resolves an unquoted YAML scalar as RecBole 1.2.1's loader does: PyYAML's YAML 1.1
    /// resolvers (`yaml.FullLoader`: `017` is octal, `1_000` and `1:30` are ints, `08`, `inf` and
    /// `tRue` are strings) plus RecBole's float resolver, which also takes `1e-3` without a dot.
    /// (A date such as 2024-04-01, which PyYAML makes a date, stays text.)
    static func parsePlainScalar(_ text: String) -> ConfigValue {
        if ["", "~", "null", "Null", "NULL"].contains(text) { return .null }
        if ["yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"].contains(text) { return .bool(true) }
        if ["no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"].contains(text) { return .bool(false) }
        // Every number pattern below starts with a sign, a digit or a dot: other text skips the
        // regexes, which Swift parses anew on each call (an alias bomb's many words were slow).
        guard let first = text.first, "+-.0123456789".contains(first) else { return .string(text) }
        if let d = yamlFloat(text) { return .double(d) }
        if let i = yamlInt(text) { return .int(i) }
        return .string(text)
    }

    /// PyYAML's `construct_yaml_float` on its float pattern joined with RecBole's.
    static func yamlFloat(_ text: String) -> Double? {
        switch text {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .infinity
        case "-.inf", "-.Inf", "-.INF": return -.infinity
        case ".nan", ".NaN", ".NAN": return .nan
        default: break
        }
        let decimal = #/[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+|\.[0-9_]+(?:[eE][-+][0-9]+)?/#
        let plain = text.replacingOccurrences(of: "_", with: "")
        if text.wholeMatch(of: decimal) != nil { return Double(plain) }
        if text.wholeMatch(of: #/[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*/#) != nil { return sexagesimal(plain) }
        return nil
    }

    /// PyYAML's `construct_yaml_int`: binary, octal (a leading 0), decimal, hex, base 60.
    static func yamlInt(_ text: String) -> Int? {
        let pattern = #/[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+/#
        guard text.wholeMatch(of: pattern) != nil else { return nil }
        var digits = Substring(text.replacingOccurrences(of: "_", with: ""))
        let sign = digits.first == "-" ? -1 : 1
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        if digits.contains(":") { return sexagesimal(String(digits)).map { sign * Int($0) } }
        let radix = digits.hasPrefix("0b") ? 2 : digits.hasPrefix("0x") ? 16 : digits.count > 1 && digits.hasPrefix("0") ? 8 : 10
        return Int(radix == 2 || radix == 16 ? digits.dropFirst(2) : digits, radix: radix).map { sign * $0 }
    }

    /// `a:b:c` in base 60 (the sign, if any, applies to the whole).
    private static func sexagesimal(_ text: String) -> Double? {
        let negative = text.hasPrefix("-")
        let parts = text.drop { $0 == "-" || $0 == "+" }.split(separator: ":").map { Double($0) }
        guard parts.allSatisfy({ $0 != nil }) else { return nil }
        let value = parts.reduce(0) { $0 * 60 + $1! }
        return negative ? -value : value
    }

    /// Parses YAML text (a document or a flow value such as `[10, 20]`).
    public static func parse(yaml text: String) throws -> ConfigValue {
        guard let node = try Yams.compose(yaml: text) else { return .null }
        var budget = expansionLimit
        do { return try ConfigValue(node: node, budget: &budget) } catch is TooLarge {
            throw RecBenchError("YAML value expands to more than \(expansionLimit) values (nested aliases?)")
        } catch let tag as UnreadableTag {
            throw RecBenchError(tag.message)
        }
    }
}

import Foundation
