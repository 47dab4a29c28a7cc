import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Pop: every user gets the items with the most train interactions.
///
/// Uses true train counts (duplicates counted), not RecBole's per-batch counter
/// (reference note 3).
public struct Pop: Recommender {
    public static let name = "Pop"
    public static let readsSeed = false   // no draw: the same fit at every seed
    public static let summary = "Most popular items by train interaction count (same list for every user)"
    public static let kind = ModelKind.baseline
    public static let parameters: [ConfigKey] = []

    /// Train interaction count per item.
    private var itemCounts: [Float] = []

    public init(parameters: ModelParameters) throws {}

    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        itemCounts = data.trainMatrix.columnSums()
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        let n = itemCounts.count
        block.values.withUnsafeMutableBufferPointer { out in
            for r in 0..<users.count {
                _ = UnsafeMutableBufferPointer(rebasing: out[(r * n)..<((r + 1) * n)]).update(fromContentsOf: itemCounts)
            }
        }
    }
}
