/// The nonzero pattern of a sparse matrix as a membership test: one bit per (row, column)
/// when the bitmap is small enough, else a binary search in the row. Negative sampling asks
/// "has this user had this item?" for every draw; a bit beats a search by an order of magnitude.
public struct PatternSet: Sendable {
    /// Largest bitmap kept, in bits (64 MiB); larger patterns are searched instead.
    public static let bitmapLimit = 1 << 29

    /// The matrix whose pattern this is.
    public let matrix: SparseMatrix
    private let words: [UInt64]
    private let wordsPerRow: Int

    /// The pattern of `matrix` (its stored entries, whatever their values).
    public init(_ matrix: SparseMatrix, bitmapLimit: Int = PatternSet.bitmapLimit) {
        self.matrix = matrix
        let perRow = (matrix.columns + 63) / 64
        guard matrix.rows * perRow * 64 <= bitmapLimit else {
            words = []; wordsPerRow = 0
            return
        }
        var bits = [UInt64](repeating: 0, count: matrix.rows * perRow)
        for r in 0..<matrix.rows {
            for c in matrix.columns(ofRow: r) { bits[r * perRow + Int(c) >> 6] |= 1 << UInt64(c & 63) }
        }
        words = bits; wordsPerRow = perRow
    }

    /// Whether the bitmap is used (otherwise rows are searched).
    public var isBitmap: Bool { wordsPerRow > 0 }

    /// Whether (row, column) is a stored entry.
    @inline(__always)
    public func contains(row: Int, column: Int) -> Bool {
        guard wordsPerRow > 0 else { return matrix.contains(row: row, column: column) }
        return words[row * wordsPerRow + column >> 6] & (1 << UInt64(column & 63)) != 0
    }

    /// Stored entries in `row`.
    @inline(__always)
    public func count(ofRow row: Int) -> Int { matrix.entries(ofRow: row).count }
}
