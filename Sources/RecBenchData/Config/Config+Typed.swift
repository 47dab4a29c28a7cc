import RecBenchSupport
/// Typed accessors, the one set of reading rules for every key, global or a model's: each
/// throws a one-line error naming the key, where it was set, what was expected and what
/// was found.
extension Config {
    package func typeError(_ key: String, _ expected: String) -> RecBenchError {
        RecBenchError.config(key, origin: origin(of: key), "expected \(expected), got \(self[key])")
    }

    /// The error for a value outside `range` (the bounds said as a reader would).
    func rangeError<T: Comparable>(_ key: String, _ value: T, _ range: ClosedRange<T>, unbounded: (T, T), entries: Bool = false) -> RecBenchError {
        let subject = entries ? "entries must" : "must"
        let positive = (range.lowerBound as? Double) == .leastNonzeroMagnitude   // a range written as "greater than 0"
        let bounds = range.upperBound == unbounded.1 ? (positive ? "be greater than 0" : "be at least \(range.lowerBound)")
            : range.lowerBound == unbounded.0 ? "be at most \(range.upperBound)"
            : positive ? "be greater than 0 and at most \(range.upperBound)" : "lie in \(range.lowerBound)...\(range.upperBound)"
        return RecBenchError.config(key, origin: origin(of: key), "\(subject) \(bounds), got \(value)")
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

    /// An integer value of at least `minimum`.
    public func int(_ key: String, atLeast minimum: Int? = nil) throws -> Int {
        try int(key, in: (minimum ?? .min)...(.max))
    }

    /// An integer value in `range`.
    public func int(_ key: String, in range: ClosedRange<Int>) throws -> Int {
        guard let i = self[key].intValue else { throw typeError(key, "an integer") }
        guard range.contains(i) else { throw rangeError(key, i, range, unbounded: (.min, .max)) }
        return i
    }

    /// A finite floating-point value (ints accepted) in `range`; `positive` also excludes 0.
    public func double(_ key: String, in range: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude,
                       positive: Bool = false) throws -> Double {
        guard let d = self[key].doubleValue else { throw typeError(key, "a number") }
        guard d.isFinite, range.contains(d), !positive || d > 0 else {
            let unboundedBelow = range.lowerBound <= -.greatestFiniteMagnitude, abovePositive = range.lowerBound == .leastNonzeroMagnitude
            let bounds = positive || (abovePositive && range.upperBound >= .greatestFiniteMagnitude) ? "greater than 0"
                : abovePositive ? "greater than 0 and at most \(range.upperBound)"
                : range.upperBound >= .greatestFiniteMagnitude ? (unboundedBelow ? "" : "of at least \(range.lowerBound)")
                : unboundedBelow ? "of at most \(range.upperBound)"
                : "between \(range.lowerBound) and \(range.upperBound)"
            throw RecBenchError.config(key, origin: origin(of: key), "must be a finite number\(bounds.isEmpty ? "" : " ")\(bounds), got \(d)")
        }
        return d
    }

    /// A boolean value.
    public func bool(_ key: String) throws -> Bool {
        guard case .bool(let b) = self[key] else { throw typeError(key, "true or false") }
        return b
    }

    /// The value as a list: a list as it is, a single value as a one-element list.
    func listed(_ key: String) -> [ConfigValue]? {
        switch self[key] {
        case .list(let items): return items
        case .null, .map: return nil
        case let single: return [single]
        }
    }

    /// A list of strings (a single string counts as a one-element list).
    public func stringList(_ key: String) throws -> [String] {
        try (listed(key) ?? [.null]).map { item in
            guard let s = item.stringValue else { throw typeError(key, "a list of strings") }
            return s
        }
    }

    /// A list of integers, each in `range` (a single integer counts as a one-element list).
    public func intList(_ key: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> [Int] {
        try (listed(key) ?? [.null]).map { item in
            guard let i = item.intValue else { throw typeError(key, "an integer or a list of integers") }
            guard range.contains(i) else { throw rangeError(key, i, range, unbounded: (.min, .max), entries: true) }
            return i
        }
    }

    /// A list of finite numbers, each in `range` (a single number counts as a one-element list).
    public func doubleList(_ key: String, in range: ClosedRange<Double> = -.greatestFiniteMagnitude...(.greatestFiniteMagnitude)) throws -> [Double] {
        try (listed(key) ?? [.null]).map { item in
            guard let d = item.doubleValue, d.isFinite else { throw typeError(key, "a number or a list of numbers") }
            guard range.contains(d) else {
                throw rangeError(key, d, range, unbounded: (-.greatestFiniteMagnitude, .greatestFiniteMagnitude), entries: true)
            }
            return d
        }
    }

    /// A map from file suffix to column names (`load_col`, `unused_col`), or nil when null.
    public func columnMap(_ key: String) throws -> [String: [String]]? {
        try groups(key, expected: "a map of suffix → list of column names")
    }

    /// A map of names to lists of strings (a single string counts as a one-element list, null
    /// as an empty one), or nil when the value is null: `load_col`, FFM's `fields`.
    public func groups(_ key: String, expected: String = "a map of group → list of column names") throws -> [String: [String]]? {
        switch self[key] {
        case .null: return nil
        case .map(let m):
            return try m.mapValues { value in
                switch value {
                case .list(let items):
                    return try items.map {
                        guard let s = $0.stringValue else { throw typeError(key, "lists of column names") }
                        return s
                    }
                case .string(let s): return [s]
                case .null: return []
                default: throw typeError(key, expected)
                }
            }
        default: throw typeError(key, expected)
        }
    }
}
