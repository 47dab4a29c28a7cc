import Testing
import Foundation
import Synchronization
import Linalg

/// `Compute`'s parallel loops: every chunk runs exactly once, whatever the sizes, when loops
/// nest, and when several threads run loops at once (the pool serves one; the others run theirs
/// on their callers).
@Suite struct ComputeTests {
    /// Counts how often each chunk ran.
    final class Tally: Sendable {
        let counts: Mutex<[Int]>
        init(_ n: Int) { counts = Mutex([Int](repeating: 0, count: n)) }
        func hit(_ i: Int) { counts.withLock { $0[i] += 1 } }
        var exactlyOnce: Bool { counts.withLock { $0.allSatisfy { $0 == 1 } } }
    }

    @Test func everyChunkRunsOnceInThousandsOfLoops() {
        let compute = Compute(workers: 2, blasThreads: 1)
        var rng = SeededGenerator(seed: 3)
        for _ in 0..<3_000 {
            let count = Int(rng.next() % 200) + 1, chunk = Int(rng.next() % 16) + 1
            let tally = Tally(count)
            compute.forEachChunk(count: count, chunkSize: chunk) { range in for i in range { tally.hit(i) } }
            #expect(tally.exactlyOnce, "count \(count), chunk \(chunk)")
        }
    }

    @Test func aLoopInsideALoopRuns() {
        let compute = Compute(workers: 2, blasThreads: 1), tally = Tally(64 * 50)
        compute.forEachChunk(count: 64, chunkSize: 1) { outer in
            compute.forEachChunk(count: 50, chunkSize: 7) { inner in for i in inner { tally.hit(outer.lowerBound * 50 + i) } }
        }
        #expect(tally.exactlyOnce)
    }

    @Test func loopsFromSeveralThreadsAtOnceAllFinish() {
        let compute = Compute(workers: 2, blasThreads: 1), tallies = (0..<4).map { _ in Tally(500 * 37) }
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for loop in 0..<500 {
                compute.forEachChunk(count: 37, chunkSize: 5) { range in for i in range { tallies[t].hit(loop * 37 + i) } }
            }
        }
        #expect(tallies.allSatisfy { $0.exactlyOnce })
    }

    @Test(.enabled(if: Compute.coreCount > 1)) func chunksRunOnMoreThanOneThread() {
        // Each attempt first lets the helpers fall asleep (they poll 200 µs), so the loop must wake
        // one. Other suites' loops may hold the pool for a while (this one's then runs on its
        // caller): attempts go on until one runs on two threads or 10 s have passed.
        let compute = Compute(workers: 2, blasThreads: 1), deadline = Date().addingTimeInterval(10)
        var threads = 0
        while threads < 2 && Date() < deadline {
            usleep(1_000)
            let seen = Mutex<Set<pthread_t>>([])
            compute.forEachChunk(count: 8, chunkSize: 1) { _ in
                seen.withLock { _ = $0.insert(pthread_self()) }
                usleep(2_000)
            }
            threads = seen.withLock { $0.count }
        }
        #expect(threads >= 2)
    }

    @Test func chunksWriteTheirOwnMemory() {
        // Plain stores (no lock of the test's own): the caller must see every helper's writes.
        var values = [Int](repeating: -1, count: 10_000)
        values.withUnsafeMutableBufferPointer { buffer in
            let out = UnsafeShared(buffer.baseAddress!)
            for _ in 0..<200 {
                Compute(workers: 2, blasThreads: 1).forEachChunk(count: 10_000, chunkSize: 97) { range in
                    for i in range { out.value[i] += 1 }
                }
            }
        }
        #expect(values.allSatisfy { $0 == 199 })
    }

    @Test func mapChunksKeepsChunkOrder() {
        let sums = Compute(workers: 2, blasThreads: 1).mapChunks(count: 1_000, chunkSize: 9) { range in range.reduce(0, +) }
        #expect(sums == stride(from: 0, to: 1_000, by: 9).map { start in (start..<min(1_000, start + 9)).reduce(0, +) })
    }
}
