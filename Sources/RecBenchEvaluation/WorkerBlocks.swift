import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Scores and ranks a batch as one parallel region, each worker on its own share of the
/// users: it scores them into its own block (one OpenBLAS thread) and ranks those rows while
/// they are still in its cache. Used when products are split over the workers anyway (one
/// OpenBLAS thread per call, the 2-core default), where it cuts the same rows a split GEMM
/// would and so gives the same scores; it saves the second parallel region and the rows'
/// second trip through memory. BPR's validation pass on ml-100k, 2026-11-25, with the
/// smaller ranking changes of the same commit: median 1.40 → 1.28 ms (210 passes a side,
/// interleaved; the epochs' `valid_seconds` of `recbench run --json`).
final class WorkerBlocks: @unchecked Sendable {   // worker w touches only blocks[w]
    private var blocks: [Matrix]

    /// Empty blocks for `workers` workers; each is sized by its first share.
    init(workers: Int) {
        blocks = Array(repeating: Matrix(rows: 0, columns: 0), count: max(1, workers))
    }

    /// Scores and ranks `batch` (whose first user is slot `offset`), split into one
    /// contiguous share per worker. Returns the wall seconds split between scoring and
    /// ranking in proportion to the workers' summed time in each.
    func scoreAndRank(_ scorer: any Scorer, batch: ArraySlice<Int32>, offset: Int, ranking: Ranking) -> (scores: Double, rank: Double) {
        let workers = blocks.count, itemCount = ranking.target.itemCount
        let share = (batch.count + workers - 1) / workers
        let started = ContinuousClock.now
        let times = blocks.withUnsafeMutableBufferPointer { slots in
            let shared = UnsafeShared(slots.baseAddress!)
            return Compute(workers: workers, blasThreads: 1).mapChunks(count: batch.count, chunkSize: share) { range in
                let block = shared.value + range.lowerBound / share
                if block.pointee.rows != range.count {
                    block.pointee = Matrix(rows: 0, columns: 0)   // a shorter share: never two blocks at once
                    block.pointee = Matrix(uninitializedRows: range.count, columns: itemCount)   // scorers write every entry
                }
                let users = batch[(batch.startIndex + range.lowerBound)..<(batch.startIndex + range.upperBound)]
                let scored = ContinuousClock.now
                ranking.score(scorer, rows: users, firstSlot: offset + range.lowerBound, into: &block.pointee, compute: .serial)
                let ranked = ContinuousClock.now
                block.pointee.values.withUnsafeMutableBufferPointer { scores in
                    for r in 0..<range.count {
                        ranking.rank(UnsafeMutableBufferPointer(start: scores.baseAddress! + r * itemCount, count: itemCount),
                                     user: Int(users[users.startIndex + r]), slot: offset + range.lowerBound + r)
                    }
                }
                return ((ranked - scored).seconds, (ContinuousClock.now - ranked).seconds)
            }
        }
        let wall = (ContinuousClock.now - started).seconds
        let scoring = times.reduce(0) { $0 + $1.0 }, ranking = times.reduce(0) { $0 + $1.1 }
        let scoringShare = scoring + ranking > 0 ? scoring / (scoring + ranking) : 1
        return (wall * scoringShare, wall * (1 - scoringShare))
    }
}
