import RecBenchSupport
import RecBenchData
/// A model's resolved hyperparameters, read with range checks by the config's own typed
/// accessors (one set of rules and messages for every key). Errors name the key and where
/// it was set.
public struct ModelParameters: Sendable {
    /// The effective config (model keys resolved through all layers, declared defaults filled
    /// in); read only through the typed accessors below, so a model sees its declared keys and
    /// nothing else.
    private let config: Config
    /// The model's declared parameters.
    public let declared: [ConfigKey]

    /// Parameters for a model declaring `declared`, from `config`; a declared key that is
    /// null there takes its declared default.
    public init(config: Config, declared: [ConfigKey]) {
        var config = config
        for p in declared where config[p.name] == .null && p.defaultValue != .null {
            config.set(p.name, to: p.defaultValue, origin: "default")
        }
        self.config = config
        self.declared = declared
    }

    /// `read` on the config, for a key the model declared.
    private func declared<T>(_ name: String, _ read: (Config) throws -> T) rethrows -> T {
        precondition(declared.contains { $0.name == name }, "parameter '\(name)' is not declared by the model")
        return try read(config)
    }

    /// An error about parameter `name` that names where it was set.
    public func invalid(_ name: String, _ message: String) -> RecBenchError {
        RecBenchError.config(name, origin: config.origin(of: name), message)
    }

    /// An error about two keys that conflict, blamed on `name` unless only `other` was set
    /// (a user who set `other` alone is told about the key they set, not a default).
    public func conflict(_ name: String, _ other: String, _ message: String) -> RecBenchError {
        !config.isSet(name) && config.isSet(other) ? invalid(other, message) : invalid(name, message)
    }

    /// `MAX_ITEM_LIST_LENGTH`, the one data key a sequential model's own settings may conflict
    /// with (BERT4Rec masks ⌊mask_ratio · L⌋ positions), read so that the conflict is refused
    /// when the model is planned, before any data is loaded.
    public func sequenceLength() throws -> Int { try config.int("MAX_ITEM_LIST_LENGTH", atLeast: 1) }

    /// A finite number in `range`.
    public func double(_ name: String, in range: ClosedRange<Double> = -.greatestFiniteMagnitude...(.greatestFiniteMagnitude)) throws -> Double {
        try declared(name) { try $0.double(name, in: range) }
    }

    /// A string, one of `choices`.
    public func choice(_ name: String, of choices: [String]) throws -> String {
        try declared(name) { config in
            let value = try config.string(name)
            guard choices.contains(value) else { throw invalid(name, "expected \(choices.joined(separator: " or ")), got '\(value)'") }
            return value
        }
    }

    /// A string, or nil when the key is null.
    public func optionalString(_ name: String) throws -> String? {
        try declared(name) { try $0.optionalString(name) }
    }

    /// true or false.
    public func bool(_ name: String) throws -> Bool {
        try declared(name) { try $0.bool(name) }
    }

    /// An integer in `range`.
    public func int(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        try declared(name) { try $0.int(name, in: range) }
    }

    /// A list of integers, each in `range`.
    public func intList(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> [Int] {
        try declared(name) { try $0.intList(name, in: range) }
    }

    /// A list of strings (column names).
    public func stringList(_ name: String) throws -> [String] {
        try declared(name) { try $0.stringList(name) }
    }

    /// A list of numbers, each in `range`.
    public func doubleList(_ name: String, in range: ClosedRange<Double> = -.greatestFiniteMagnitude...(.greatestFiniteMagnitude)) throws -> [Double] {
        try declared(name) { try $0.doubleList(name, in: range) }
    }

    /// A map of names to lists of strings (FFM's `fields`: group → columns), or nil when the
    /// value is null.
    public func groups(_ name: String) throws -> [String: [String]]? {
        try declared(name) { try $0.groups(name) }
    }

    /// The resolved value of every declared parameter (stored with each result).
    public var resolved: [String: ConfigValue] {
        Dictionary(uniqueKeysWithValues: declared.map { ($0.name, config[$0.name]) })
    }
}
