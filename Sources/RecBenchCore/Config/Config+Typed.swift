/// Typed accessors: each throws a one-line error naming the key and where it was set.
extension Config {
    func typeError(_ key: String, _ expected: String) -> RecBenchError {
        RecBenchError.config(key, origin: origin(of: key), "expected \(expected), got \(self[key])")
    }

    /// A string value (required).
    public func string(_ key: String) throws -> String {
        guard let s = self[key].stringValue else {
            if self[key] == .null { throw RecBenchError.config(key, origin: origin(of: key), "is required but not set") }
            throw typeError(key, "a string")
        }
        return s
    }

    /// A string value, or nil when the key is null.
    public func optionalString(_ key: String) throws -> String? {
        if self[key] == .null { return nil }
        return try string(key)
    }

    /// An integer value.
    public func int(_ key: String, atLeast minimum: Int? = nil) throws -> Int {
        guard let i = self[key].intValue else { throw typeError(key, "an integer") }
        if let minimum, i < minimum {
            throw RecBenchError.config(key, origin: origin(of: key), "must be at least \(minimum), got \(i)")
        }
        return i
    }

    /// A finite floating-point value (ints accepted) in `range`; `positive` also excludes 0.
    public func double(_ key: String, in range: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude,
                       positive: Bool = false) throws -> Double {
        guard let d = self[key].doubleValue else { throw typeError(key, "a number") }
        guard d.isFinite, range.contains(d), !positive || d > 0 else {
            let bounds = positive ? "greater than 0"
                : range.upperBound == .greatestFiniteMagnitude ? "of at least \(range.lowerBound)"
                : range.lowerBound == -.greatestFiniteMagnitude ? "of at most \(range.upperBound)"
                : "between \(range.lowerBound) and \(range.upperBound)"
            throw RecBenchError.config(key, origin: origin(of: key), "must be a finite number \(bounds), got \(d)")
        }
        return d
    }

    /// A boolean value.
    public func bool(_ key: String) throws -> Bool {
        guard case .bool(let b) = self[key] else { throw typeError(key, "true or false") }
        return b
    }

    /// A list of strings (a single string counts as a one-element list).
    public func stringList(_ key: String) throws -> [String] {
        switch self[key] {
        case .string(let s): return [s]
        case .list(let items):
            return try items.map { item in
                guard let s = item.stringValue else { throw typeError(key, "a list of strings") }
                return s
            }
        default: throw typeError(key, "a list of strings")
        }
    }

    /// A list of integers (a single integer counts as a one-element list).
    public func intList(_ key: String) throws -> [Int] {
        switch self[key] {
        case .int(let i): return [i]
        case .list(let items):
            return try items.map { item in
                guard let i = item.intValue else { throw typeError(key, "an integer or a list of integers") }
                return i
            }
        default: throw typeError(key, "an integer or a list of integers")
        }
    }

    /// A map from file suffix to column names (`load_col`, `unused_col`), or nil when null.
    public func columnMap(_ key: String) throws -> [String: [String]]? {
        switch self[key] {
        case .null: return nil
        case .map(let m):
            var result: [String: [String]] = [:]
            for (suffix, value) in m {
                switch value {
                case .list(let items):
                    result[suffix] = try items.map {
                        guard let s = $0.stringValue else { throw typeError(key, "lists of column names") }
                        return s
                    }
                case .string(let s): result[suffix] = [s]
                case .null: result[suffix] = []
                default: throw typeError(key, "a map of suffix → list of column names")
                }
            }
            return result
        default: throw typeError(key, "a map of suffix → list of column names")
        }
    }
}
