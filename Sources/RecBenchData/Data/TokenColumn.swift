import RecBenchSupport
/// A token column stored once per distinct value: row `r` holds `vocabulary[codes[r]]`, and
/// the vocabulary is in order of first appearance. A 20-million-row log has a few hundred
/// thousand distinct ids, so this holds one `String` per id instead of one per row.
public struct TokenColumn: Sendable, Equatable {
    /// The distinct values, in order of first appearance.
    public var vocabulary: [String]
    /// Each row's index into `vocabulary`.
    public var codes: [Int32]

    /// A column from its values (interned here; for tests and small tables).
    public init(_ values: [String]) {
        var index: [String: Int32] = [:]
        var vocabulary: [String] = []
        codes = values.map { value in
            if let code = index[value] { return code }
            let code = Int32(index.count)
            index[value] = code
            vocabulary.append(value)
            return code
        }
        self.vocabulary = vocabulary
    }

    /// A column from an interned vocabulary and its codes.
    public init(vocabulary: [String], codes: [Int32]) {
        self.vocabulary = vocabulary
        self.codes = codes
    }

    /// Number of rows.
    public var count: Int { codes.count }

    /// Row `r`'s value.
    public subscript(r: Int) -> String { vocabulary[Int(codes[r])] }

    /// Every row's value as a `String` (one per row: for small tables only).
    public var values: [String] { codes.map { vocabulary[Int($0)] } }
}

/// Interns byte strings into dense codes without building a `String` for a value seen
/// before: an open-addressing table over the bytes, which live once in an arena.
struct TokenInterner {
    private var arena: [UInt8] = []
    /// Start of each code's bytes in `arena`; code c spans starts[c]..<starts[c + 1].
    private var starts: [Int] = [0]
    private var hashes: [UInt64] = []
    /// Slot → code + 1 (0: empty). Its size is a power of two, at most half full.
    private var slots = [Int32](repeating: 0, count: 1024)
    /// The distinct values as strings, in code order.
    private(set) var vocabulary: [String] = []

    /// Number of distinct values.
    var count: Int { vocabulary.count }

    /// The code of `bytes`, adding it when new. `makeString` turns new bytes into the
    /// vocabulary's `String` (and may throw to refuse them); it is not called for a value
    /// seen before, whose bytes were accepted then.
    mutating func code(of bytes: UnsafeBufferPointer<UInt8>, makeString: (UnsafeBufferPointer<UInt8>) throws -> String) rethrows -> Int32 {
        let hash = Self.hash(bytes)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = slots[slot]
            if stored == 0 { break }
            let code = Int(stored - 1)
            if hashes[code] == hash && equal(code, bytes) { return Int32(code) }
            slot = (slot + 1) & mask
        }
        let string = try makeString(bytes)
        let code = Int32(vocabulary.count)
        vocabulary.append(string)
        arena.append(contentsOf: bytes)
        starts.append(arena.count)
        hashes.append(hash)
        slots[slot] = code + 1
        if vocabulary.count * 2 > slots.count { grow() }
        return code
    }

    private func equal(_ code: Int, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = starts[code], length = starts[code + 1] - start
        guard length == bytes.count else { return false }
        return arena.withUnsafeBufferPointer { a in
            for i in 0..<length where a[start + i] != bytes[i] { return false }
            return true
        }
    }

    private mutating func grow() {
        slots = [Int32](repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for code in hashes.indices {
            var slot = Int(truncatingIfNeeded: hashes[code]) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(code + 1)
        }
    }

    /// FNV-1a, then a multiply-xorshift finaliser so the low bits (the slot) mix well.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf29ce484222325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        h ^= h >> 33
        h = h &* 0xff51afd7ed558ccd
        return h ^ (h >> 33)
    }
}
