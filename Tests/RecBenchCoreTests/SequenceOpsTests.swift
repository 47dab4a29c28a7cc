import Foundation
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// The sequence ops' gradients against central differences (AutodiffTests' check), and
/// their forward values against plain formulas.
@Suite(.serialized) struct SequenceOpsTests {
    let ops = AutodiffTests()

    @Test func paddedLookupReadsZerosAndPassesNoGradientToThePaddingRow() {
        ops.check([ops.m(5, 3, 40)]) { t, v in t.gather(v[0], rows: [1, 4, 1, 0], padding: 4) }
        let tape = Tape(compute: .serial)
        let table = tape.parameter(ops.m(5, 3, 41))
        let out = tape.gather(table, rows: [4, 2], padding: 4)
        #expect(out.value.row(0).allSatisfy { $0 == 0 } && Array(out.value.row(1)) == Array(table.value.row(2)))
        tape.backward(tape.mean(out))
        #expect(table.grad!.row(4).allSatisfy { $0 == 0 } && table.grad!.row(2).allSatisfy { $0 != 0 })
    }

    @Test func softmaxCrossEntropy() {
        ops.check([ops.m(3, 4, 42), ops.m(6, 4, 43)]) { t, v in t.softmaxCrossEntropy(v[0], v[1], targets: [5, 0, 2]) }
        // Against the formula: mean of log Σ exp(h·e_j) − h·e_target.
        let h = ops.m(2, 3, 44), e = ops.m(4, 3, 45)
        let loss = Tape(compute: .serial).softmaxCrossEntropy(Variable(h), Variable(e), targets: [1, 3]).value.values[0]
        var expected = 0.0
        for (r, target) in [1, 3].enumerated() {
            let logits = (0..<4).map { j in (0..<3).reduce(0.0) { $0 + Double(h[r, $1]) * Double(e[j, $1]) } }
            expected += Foundation.log(logits.map { Foundation.exp($0) }.reduce(0, +)) - logits[target]
        }
        #expect(abs(Double(loss) - expected / 2) < 1e-5)
    }

    @Test func gruThroughTime() {
        // Three sequences, four steps, input 3 → hidden 2 (3H = 6), every weight and the input.
        ops.check([ops.m(12, 3, 46), ops.m(3, 6, 47), ops.m(2, 6, 48)]) { t, v in t.gru(v[0], wInput: v[1], wHidden: v[2], steps: 4) }
        // One step: h₀ = 0, so the hidden weights get a zero gradient, as the numeric one.
        ops.check([ops.m(2, 3, 49), ops.m(3, 6, 50), ops.m(2, 6, 51)]) { t, v in t.gru(v[0], wInput: v[1], wHidden: v[2], steps: 1) }
    }

    @Test func gruStepEqualsTorchsCell() {
        // One sequence, two steps, by hand: r, z, n as torch's GRU without biases.
        let x = ops.m(2, 2, 52), wi = ops.m(2, 3, 53), wh = ops.m(1, 3, 54)
        let out = Tape(compute: .serial).gru(Variable(x), wInput: Variable(wi), wHidden: Variable(wh), steps: 2).value
        func sigmoid(_ v: Double) -> Double { 1 / (1 + Foundation.exp(-v)) }
        var h = 0.0
        for t in 0..<2 {
            func input(_ j: Int) -> Double { Double(x[t, 0]) * Double(wi[0, j]) + Double(x[t, 1]) * Double(wi[1, j]) }
            let r = sigmoid(input(0) + h * Double(wh[0, 0])), z = sigmoid(input(1) + h * Double(wh[0, 1]))
            let n = Foundation.tanh(input(2) + r * h * Double(wh[0, 2]))
            h = (1 - z) * n + z * h
            #expect(abs(Double(out[t, 0]) - h) < 1e-6)
        }
    }
}
