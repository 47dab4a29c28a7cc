import Foundation
import Yams
import RecBenchSupport

/// One source of config values: the built-in defaults, a model's YAML, a `--config` file,
/// or the command line's `--set` assignments.
public struct ConfigLayer: Sendable {
    /// Where the values come from, as shown to users ("Configs/ml-100k.yml", "--set").
    public let source: String
    /// Top-level keys and their values.
    public let values: [String: ConfigValue]
    /// 1-based line of each top-level key, when the source is a file.
    public let lines: [String: Int]
    /// Maps set only entry by entry (`--set eval_args.order=TO`): they change those entries of
    /// the value below instead of replacing it whole.
    public let entryKeys: Set<String>

    /// A layer from already-parsed values.
    public init(source: String, values: [String: ConfigValue], lines: [String: Int] = [:], entryKeys: Set<String> = []) {
        self.source = source
        self.values = values
        self.lines = lines
        self.entryKeys = entryKeys
    }

    /// "file:line" of `key`, or the layer's source.
    public func origin(of key: String) -> String {
        lines[key].map { "\(source):\($0)" } ?? source
    }

    /// Reads a YAML file whose top level is a mapping.
    public static func file(_ path: String) throws -> ConfigLayer {
        let layers = try fileDocuments(path)
        guard layers.count <= 1 else {
            throw RecBenchError.file(path, "expected one YAML document, found \(layers.count)")
        }
        return layers.first ?? ConfigLayer(source: path, values: [:])
    }

    /// Reads a YAML file of one or more documents (separated by `---`), each a mapping and
    /// each one layer, in order: a later document overrides an earlier one, so a verbatim
    /// RecBole config can be followed by local overrides in the same file.
    public static func fileDocuments(_ path: String) throws -> [ConfigLayer] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RecBenchError.file(path, "config file not found")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RecBenchError.file(path, "config file is not valid UTF-8")
        }
        return try documents(text, source: path)
    }

    /// Parses YAML text whose top level is a mapping (an empty document is an empty layer).
    public static func yaml(_ text: String, source: String) throws -> ConfigLayer {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw RecBenchError.file(source, line: yamlErrorLine(error), "invalid YAML: \(yamlErrorSummary(error))")
        }
        return try layer(node, source: source)
    }

    /// Parses YAML text of one or more documents, one layer each.
    public static func documents(_ text: String, source: String) throws -> [ConfigLayer] {
        var nodes: YamlSequence<Node>
        do { nodes = try Yams.compose_all(yaml: text) } catch let error as YamlError {
            throw RecBenchError.file(source, line: yamlErrorLine(error), "invalid YAML: \(yamlErrorSummary(error))")
        }
        var layers: [ConfigLayer] = []
        while let node = nodes.next() { layers.append(try layer(node, source: source)) }
        if let error = nodes.error {
            let yamlError = error as? YamlError
            throw RecBenchError.file(source, line: yamlError.flatMap(yamlErrorLine),
                                     "invalid YAML: \(yamlError.map(yamlErrorSummary) ?? "\(error)")")
        }
        return layers
    }

    static func layer(_ node: Node?, source: String) throws -> ConfigLayer {
        guard let node else { return ConfigLayer(source: source, values: [:]) }
        guard case .mapping(let mapping) = node else {
            throw RecBenchError.file(source, line: node.mark?.line, "the top level must be a mapping of `key: value` lines")
        }
        var values: [String: ConfigValue] = [:]
        var lines: [String: Int] = [:]
        var budget = ConfigValue.expansionLimit
        for (k, v) in mapping {
            let key: String
            do { key = try ConfigValue.key(k) } catch let tag as ConfigValue.UnreadableTag {
                throw RecBenchError.file(source, line: tag.line ?? k.mark?.line, "in a key: \(tag.message)")
            }
            if let previous = lines[key] {
                throw RecBenchError.file(source, line: k.mark?.line, field: key, "key is set twice (first on line \(previous))")
            }
            do { values[key] = try ConfigValue(node: v, budget: &budget) } catch is ConfigValue.TooLarge {
                throw RecBenchError.file(source, line: k.mark?.line, field: key,
                                         "the document expands to more than \(ConfigValue.expansionLimit) values (nested YAML aliases?)")
            } catch let tag as ConfigValue.UnreadableTag {
                throw RecBenchError.file(source, line: tag.line ?? k.mark?.line, field: key, tag.message)
            }
            lines[key] = k.mark?.line ?? 0
        }
        return ConfigLayer(source: source, values: values, lines: lines)
    }

    /// Parses `key=value` assignments; the value is YAML (`topk=[10,20]`), and a dotted key
    /// sets one entry of a map (`eval_args.order=TO`).
    public static func assignments(_ assignments: [String], source: String = "--set") throws -> ConfigLayer {
        var values: [String: ConfigValue] = [:]
        var dotted: Set<String> = [], whole: Set<String> = []
        for assignment in assignments {
            guard let eq = assignment.firstIndex(of: "="), eq != assignment.startIndex else {
                throw RecBenchError(location: source, "expected key=value, got '\(assignment)'")
            }
            let key = String(assignment[..<eq]).trimmingCharacters(in: .whitespaces)
            let text = String(assignment[assignment.index(after: eq)...])
            let value: ConfigValue
            do {
                value = try ConfigValue.parse(yaml: text)
            } catch let error as RecBenchError {
                throw RecBenchError(location: source, field: key, error.message)
            } catch {
                throw RecBenchError(location: source, field: key, "value '\(text)' is not valid YAML")
            }
            let path = key.split(separator: ".").map(String.init)
            values[path[0]] = ConfigLayer.setting(path.dropFirst(), to: value, in: values[path[0]])
            if path.count > 1 { dotted.insert(path[0]) } else { whole.insert(path[0]) }
        }
        return ConfigLayer(source: source, values: values, entryKeys: dotted.subtracting(whole))
    }

    private static func setting(_ path: ArraySlice<String>, to value: ConfigValue, in existing: ConfigValue?) -> ConfigValue {
        guard let head = path.first else { return value }
        var map: [String: ConfigValue] = [:]
        if case .map(let m)? = existing { map = m }
        map[head] = setting(path.dropFirst(), to: value, in: map[head])
        return .map(map)
    }

    private static func yamlErrorLine(_ error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _):
            return mark.line
        case .duplicatedKeysInMapping(_, let context):
            return context.mark.line
        default: return nil
        }
    }

    private static func yamlErrorSummary(_ error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _):
            return problem
        case .duplicatedKeysInMapping(let duplicates, _):
            return "key set twice: " + duplicates.joined(separator: ", ")
        default: return "\(error)"
        }
    }
}

/// The effective configuration: layers merged in order (later wins), every key checked
/// against the documented keys, and each value's origin remembered.
public struct Config: Sendable {
    /// Effective values of every key that is set or has a default.
    public private(set) var values: [String: ConfigValue]
    /// Where each key's effective value came from ("default", "file.yml:3", "--set").
    public private(set) var origins: [String: String]
    /// One-line notices for accepted-but-unused RecBole keys.
    public private(set) var notices: [String]

    /// Merges `layers` over the built-in defaults. `modelKeys` are the hyperparameter names
    /// of every registered model (all accepted, so one config can drive a sweep).
    /// Unknown keys throw with the nearest known key as a suggestion. `recBoleNegatives` is
    /// what RecBole 1.2.1 would sample for this model's family (context-aware: none), named in
    /// the note on its deprecated negative-sampling keys.
    public init(layers: [ConfigLayer], modelKeys: Set<String> = [], recBoleNegatives: ConfigValue? = nil) throws {
        var values: [String: ConfigValue] = [:]
        var origins: [String: String] = [:]
        for key in ConfigKeys.global where key.role == .used {
            values[key.name] = key.defaultValue
            origins[key.name] = "default"
        }
        var notices: [String] = []
        let known = Set(ConfigKeys.byName.keys).union(modelKeys)
        for layer in layers {
            var ignored: [String] = []
            for key in layer.values.keys.sorted() {
                let value = layer.values[key]!
                let origin = layer.origin(of: key)
                let declared = ConfigKeys.byName[key]
                switch declared?.role {
                case .ignored?:
                    ignored.append(key)
                    continue
                case .mapped?:
                    continue   // read below, after the layer's own keys
                case .refused(let closest)?:
                    if value == .null || value == declared!.defaultValue || declared!.inertValues.contains(value) { ignored.append(key); continue }
                    let hint = closest.map { "; the closest recbench key is '\($0)'" } ?? ""
                    throw RecBenchError.config(key, origin: origin, "RecBole key not supported: \(declared!.summary)\(hint)")
                case .used?, nil:
                    guard known.contains(key) else {
                        throw RecBenchError.config(key, origin: origin, "unknown config key\(Suggestion.hint(for: key, in: known))")
                    }
                }
                let previous = origins[key].map { (value: values[key]!, origin: $0) }
                values[key] = Config.combined(key, value, over: previous?.value, entries: layer.entryKeys.contains(key))
                if let previous, !layer.entryKeys.contains(key), let lost = Config.lostEntries(key, previous.value, to: value) {
                    notices.append("\(origin): eval_args replaces \(previous.origin)'s whole, as RecBole 1.2.1 reads each config file: "
                                   + "\(lost) no longer \(lost.contains(",") ? "apply" : "applies") (set each entry you need, or `--set eval_args.KEY=V`)")
                }
                origins[key] = origin
            }
            if let mapped = try DeprecatedKeys.negativeSampling(in: layer, recBoleDefault: recBoleNegatives ?? DeprecatedKeys.recBoleDefault) {
                notices.append(mapped.notice)
                if let value = mapped.value {
                    values["train_neg_sample_args"] = value
                    origins["train_neg_sample_args"] = mapped.origin
                }
            }
            if !ignored.isEmpty {
                notices.append("\(layer.source): RecBole keys recbench does not use, ignored: \(ignored.joined(separator: ", "))")
            }
        }
        self.values = values
        self.origins = origins
        self.notices = notices
    }

    /// A layer's `value` for `key` over the value below it: entry-by-entry keys (`--set
    /// eval_args.order=TO`) change those entries; otherwise the value replaces the one below
    /// whole, as RecBole reads config files, and eval_args then takes its defaults for the
    /// entries it lacks (RecBole's `default_eval_args.update(...)`).
    static func combined(_ key: String, _ value: ConfigValue, over below: ConfigValue?, entries: Bool) -> ConfigValue {
        let combined = entries && below != nil ? merged(value, over: below!) : value
        if key == "eval_args", let defaults = ConfigKeys.byName[key]?.defaultValue { return merged(combined, over: defaults) }
        return combined
    }

    private static func merged(_ value: ConfigValue, over below: ConfigValue) -> ConfigValue {
        guard case .map(let new) = value, case .map(let old) = below else { return value }
        return .map(old.merging(new) { _, n in n })   // one level, as RecBole's dict.update: a new split replaces the old one
    }

    /// The eval_args entries, other than defaults, that an earlier layer set and `replacement`
    /// does not name ("order: TO, split: {LS: valid_and_test}"), or nil.
    static func lostEntries(_ key: String, _ before: ConfigValue, to replacement: ConfigValue) -> String? {
        guard key == "eval_args", case .map(let old) = before, case .map(let new) = replacement,
              case .map(let defaults)? = ConfigKeys.byName[key]?.defaultValue else { return nil }
        let lost = old.keys.sorted().filter { new[$0] == nil && old[$0] != defaults[$0] }
        return lost.isEmpty ? nil : lost.map { "\($0): \(old[$0]!)" }.joined(separator: ", ")
    }

    /// The effective value of `key` (`.null` when unset).
    public subscript(key: String) -> ConfigValue { values[key] ?? .null }

    /// Where `key`'s effective value was set.
    public func origin(of key: String) -> String { origins[key] ?? "default" }

    /// Whether a layer (not a default) set `key`.
    public func isSet(_ key: String) -> Bool { (origins[key] ?? "default") != "default" }

    /// Sets `key` programmatically (e.g. a `--dataset` flag), recording `origin`.
    public mutating func set(_ key: String, to value: ConfigValue, origin: String) {
        values[key] = value
        origins[key] = origin
    }

    /// Removes keys that are not `keep`'s (used to drop other models' hyperparameters
    /// from a run's snapshot).
    public func restricted(to keep: (String) -> Bool) -> Config {
        var copy = self
        copy.values = values.filter { keep($0.key) }
        copy.origins = origins.filter { keep($0.key) }
        return copy
    }

    /// The effective config as YAML lines with their origins, sorted by key.
    public func rendered() -> String {
        values.keys.sorted().map { key in
            let line = "\(key): \(values[key]!)"
            let pad = String(repeating: " ", count: max(1, 56 - line.count))
            return line + pad + "# " + origin(of: key)
        }.joined(separator: "\n")
    }
}
