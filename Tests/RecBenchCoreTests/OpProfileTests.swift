import Foundation
import Testing
import Linalg
import Autodiff

/// A profiled tape charges each op by name: one call per record, backward time only to ops
/// whose pullback ran, and nothing at all when no profile is attached.
@Suite struct OpProfileTests {
    @Test func opsAreChargedByNameWithTheirPullbacks() {
        let profile = OpProfile()
        let tape = Tape(compute: .serial, profile: profile)
        let x = tape.constant(Matrix(rows: 64, columns: 32, repeating: 0.5))
        let w = tape.parameter(Matrix(rows: 32, columns: 16, repeating: 0.1))
        let b = tape.parameter(Matrix(rows: 1, columns: 16))
        let h = tape.relu(tape.linear(x, w, b))
        let loss = tape.mean(tape.relu(tape.linear(h, tape.parameter(Matrix(rows: 16, columns: 4, repeating: 0.2)),
                                                   tape.parameter(Matrix(rows: 1, columns: 4)))))
        // A constant-only op records no pullback: it is charged a forward and no backward.
        _ = tape.relu(x)
        tape.backward(loss)
        let entries = Dictionary(uniqueKeysWithValues: profile.summary.map { ($0.op, $0) })
        #expect(Set(entries.keys) == ["linear", "relu", "mean"], "\(entries.keys)")
        #expect(entries["linear"]?.calls == 2 && entries["relu"]?.calls == 3 && entries["mean"]?.calls == 1)
        #expect(entries["linear"]!.backwardSeconds > 0 && entries["mean"]!.backwardSeconds > 0)
        #expect(entries.values.allSatisfy { $0.forwardSeconds >= 0 })
        // Most time first.
        let totals = profile.summary.map(\.totalSeconds)
        #expect(totals == totals.sorted(by: >))
    }

    @Test func phasesAddUpAndAnUnprofiledTapeChargesNothing() {
        let profile = OpProfile()
        profile.time("sleep") { usleep(20_000) }
        profile.time("sleep") { usleep(20_000) }
        let sleep = profile.summary.first { $0.op == "sleep" }!
        #expect(sleep.calls == 2 && sleep.forwardSeconds >= 0.04 && sleep.backwardSeconds == 0)
        let tape = Tape(compute: .serial)
        let p = tape.parameter(Matrix(rows: 2, columns: 2, repeating: 1))
        tape.backward(tape.mean(tape.relu(p)))
        #expect(profile.summary.count == 1)
        #expect(p.grad != nil)
    }
}
