import RecBenchSupport
extension ConfigValue: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let l = try? c.decode([ConfigValue].self) { self = .list(l) }
        else { self = .map(try c.decode([String: ConfigValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d):
            // JSON has no infinity: store non-finite numbers as YAML text.
            if d.isFinite { try c.encode(d) } else { try c.encode(description) }
        case .string(let s): try c.encode(s)
        case .list(let l): try c.encode(l)
        case .map(let m): try c.encode(m)
        }
    }
}
