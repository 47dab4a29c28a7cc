/// A model's resolved hyperparameters, read with range checks. Errors name the key and
/// where it was set.
public struct ModelParameters: Sendable {
    /// The effective config (model keys resolved through all layers); read only through
    /// the typed accessors below, so a model sees its declared keys and nothing else.
    private let config: Config
    /// The model's declared parameters.
    public let declared: [ConfigKey]

    /// Parameters for a model declaring `declared`, from `config`.
    public init(config: Config, declared: [ConfigKey]) {
        self.config = config
        self.declared = declared
    }

    private func value(_ name: String) -> ConfigValue {
        precondition(declared.contains { $0.name == name }, "parameter '\(name)' is not declared by the model")
        let v = config[name]
        return v == .null ? declared.first { $0.name == name }!.defaultValue : v
    }

    /// An error about parameter `name` that names where it was set.
    public func invalid(_ name: String, _ message: String) -> RecBenchError {
        RecBenchError.config(name, origin: config.origin(of: name), message)
    }

    /// A number in `range`.
    public func double(_ name: String, in range: ClosedRange<Double> = -.infinity...(.infinity)) throws -> Double {
        guard let d = value(name).doubleValue else { throw invalid(name, "expected a number, got \(value(name))") }
        guard range.contains(d) else { throw invalid(name, "must lie in \(range.lowerBound)...\(range.upperBound), got \(d)") }
        return d
    }

    /// true or false.
    public func bool(_ name: String) throws -> Bool {
        guard case .bool(let b) = value(name) else { throw invalid(name, "expected true or false, got \(value(name))") }
        return b
    }

    /// An integer in `range`.
    public func int(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        guard let i = value(name).intValue else { throw invalid(name, "expected an integer, got \(value(name))") }
        guard range.contains(i) else { throw invalid(name, "must lie in \(range.lowerBound)...\(range.upperBound), got \(i)") }
        return i
    }

    /// A list of integers, each in `range`.
    public func intList(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> [Int] {
        let v = value(name)
        let items: [ConfigValue]
        switch v {
        case .list(let l): items = l
        case .int: items = [v]
        default: throw invalid(name, "expected a list of integers, got \(v)")
        }
        return try items.map { item in
            guard let i = item.intValue else { throw invalid(name, "expected a list of integers, got \(v)") }
            guard range.contains(i) else { throw invalid(name, "entries must lie in \(range.lowerBound)...\(range.upperBound), got \(i)") }
            return i
        }
    }

    /// A list of numbers, each in `range`.
    public func doubleList(_ name: String, in range: ClosedRange<Double> = -.infinity...(.infinity)) throws -> [Double] {
        let v = value(name)
        guard case .list(let items) = v else { throw invalid(name, "expected a list of numbers, got \(v)") }
        return try items.map { item in
            guard let d = item.doubleValue else { throw invalid(name, "expected a list of numbers, got \(v)") }
            guard range.contains(d) else { throw invalid(name, "entries must lie in \(range.lowerBound)...\(range.upperBound), got \(d)") }
            return d
        }
    }

    /// A map of names to lists of strings (RecBole's FFM `fields`: group → columns), or nil
    /// when the value is null.
    public func groups(_ name: String) throws -> [String: [String]]? {
        let v = value(name)
        if v == .null { return nil }
        guard case .map(let entries) = v else { throw invalid(name, "expected a map of group → list of column names, got \(v)") }
        return try entries.mapValues { entry in
            switch entry {
            case .string(let s): return [s]
            case .list(let items):
                return try items.map { item in
                    guard let s = item.stringValue else { throw invalid(name, "expected lists of column names, got \(v)") }
                    return s
                }
            default: throw invalid(name, "expected lists of column names, got \(v)")
            }
        }
    }

    /// The resolved value of every declared parameter (stored with each result).
    public var resolved: [String: ConfigValue] {
        Dictionary(uniqueKeysWithValues: declared.map { ($0.name, value($0.name)) })
    }
}
