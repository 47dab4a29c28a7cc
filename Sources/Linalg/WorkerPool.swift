import Foundation
import Synchronization
import CLanes

/// The threads that run `Compute`'s parallel loops beside their caller. Between loops each
/// helper polls a short while for the next one (yielding its core) before it sleeps: Dispatch's pool woke its
/// threads for every loop, ≈ 40 µs on these hosts, so a loop under ~100 µs (a 4,096 × 64
/// batch norm) ran no faster on two cores than on one, and the small ops of a context model's
/// batch lost most of the second core (docs/performance.md). One pool per process, like
/// Dispatch's: it holds no setting, only threads; a loop asked for inside another one (or
/// while another thread's loop runs) runs its chunks in order on its caller.
final class WorkerPool: @unchecked Sendable {
    static let shared = WorkerPool(helpers: Compute.coreCount - 1)

    /// One loop: its body (valid until `pending` is 0, which its caller waits out; a helper that
    /// arrives later claims only indices ≥ `count`), the next index to claim, the indices not
    /// yet finished, and the helpers still allowed to join.
    final class Job: @unchecked Sendable {
        let body: UnsafePointer<@Sendable (Int) -> Void>, count: Int
        let next = Atomic<Int>(0), pending: Atomic<Int>, seats: Atomic<Int>

        init(body: UnsafePointer<@Sendable (Int) -> Void>, count: Int, seats: Int) {
            self.body = body; self.count = count; pending = Atomic(count); self.seats = Atomic(seats)
        }

        /// Claims and runs indices until none is left.
        func work() {
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < count else { return }
                body.pointee(i)
                pending.wrappingSubtract(1, ordering: .releasing)
            }
        }
    }

    let helpers: Int
    /// `wanted`: the helpers the latest loop may use; helper k ≥ it neither polls nor wakes, so a
    /// run with fewer workers than cores leaves the other cores alone.
    private let generation = Atomic<Int>(0), sleepers = Atomic<Int>(0), busy = Atomic<Bool>(false), wanted = Atomic<Int>(0)
    private let current = Mutex<Job?>(nil)
    private let wake = NSCondition()
    /// How long an idle helper polls before it sleeps: longer than the serial work between a
    /// batch's ops, short enough that a finished phase leaves the core to others.
    static let spin: UInt64 = 200_000   // ns

    init(helpers: Int) {
        self.helpers = max(0, helpers)
        for id in 0..<self.helpers {
            let thread = Thread { [unowned self] in self.serve(id: id) }
            thread.name = "recbench worker"
            thread.start()
        }
    }

    /// body(i) for every i in 0..<count, on the caller and up to `helpers` of the pool's
    /// threads; returns when all are done.
    func run(count: Int, helpers asked: Int, _ body: @Sendable (Int) -> Void) {
        guard count > 1, min(asked, helpers) > 0,
              busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            for i in 0..<count { body(i) }
            return
        }
        defer { busy.store(false, ordering: .releasing) }
        withoutActuallyEscaping(body) { escapable in
            withUnsafePointer(to: escapable) { pointer in
                let seats = min(asked, helpers, count - 1), job = Job(body: pointer, count: count, seats: seats)
                current.withLock { $0 = job }
                wanted.store(seats, ordering: .sequentiallyConsistent)
                generation.wrappingAdd(1, ordering: .sequentiallyConsistent)
                if sleepers.load(ordering: .sequentiallyConsistent) > 0 { wake.lock(); wake.broadcast(); wake.unlock() }
                job.work()
                var polls = 0   // a helper preempted mid-chunk (more threads than cores): yield the core to it
                while job.pending.load(ordering: .acquiring) > 0 {
                    polls += 1
                    if polls < 4096 { recbench_spin_pause() } else { sched_yield() }
                }
                current.withLock { $0 = nil }
            }
        }
    }

    /// A helper's life: wait for a loop (polling, then asleep), join it if a seat is left.
    private func serve(id: Int) {
        var seen = generation.load(ordering: .acquiring)
        while true {
            seen = awaitGeneration(after: seen, id: id)
            guard let job = current.withLock({ $0 }) else { continue }
            if job.seats.wrappingSubtract(1, ordering: .relaxed).oldValue > 0 { job.work() }
        }
    }

    /// The generation after `seen` of a loop helper `id` may join: polls for `spin` ns (if the
    /// latest loop used it), then sleeps until such a loop is published.
    private func awaitGeneration(after seen: Int, id: Int) -> Int {
        let start = DispatchTime.now().uptimeNanoseconds
        var polls = 0
        while id < wanted.load(ordering: .relaxed) {
            let now = generation.load(ordering: .acquiring)
            if now != seen { return now }
            sched_yield()   // polls at once when the core is free, and lets another process's thread run when it is not
            polls += 1
            if polls % 16 == 0 && DispatchTime.now().uptimeNanoseconds - start > Self.spin { break }
        }
        wake.lock()
        defer { wake.unlock() }
        sleepers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        defer { sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
        while generation.load(ordering: .sequentiallyConsistent) == seen || id >= wanted.load(ordering: .sequentiallyConsistent) { wake.wait() }
        return generation.load(ordering: .acquiring)
    }
}
