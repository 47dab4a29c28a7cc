import Foundation
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// Every op's gradient against central differences of loss = mean(op(inputs) ⊙ R) with a
/// random R, the numeric side evaluated in Double from float32 forwards.
@Suite(.serialized) struct AutodiffTests {

    /// Checks d loss / d inputs[k] for every k in `differentiable`.
    func check(_ inputs: [Matrix], differentiable: Set<Int>? = nil, seed: UInt64 = 1,
               _ build: (Tape, [Variable]) -> Variable, file: String = #function) {
        // The loss weights R, fixed per check.
        let probe = build(Tape(compute: .serial), inputs.map { Variable($0) })
        let r = Fixtures.randomMatrix(rows: probe.value.rows, columns: probe.value.columns, seed: seed + 100)
        func loss(_ xs: [Matrix]) -> Double {
            let out = build(Tape(compute: .serial), xs.map { Variable($0) }).value
            var s = 0.0
            for i in 0..<out.values.count { s += Double(out.values[i]) * Double(r.values[i]) }
            return s / Double(out.values.count)
        }
        let tape = Tape(compute: .serial)
        let variables = inputs.enumerated().map { i, m in (differentiable?.contains(i) ?? true) ? tape.parameter(m) : tape.constant(m) }
        let out = build(tape, variables)
        tape.backward(tape.mean(tape.mul(out, tape.constant(r))))
        let eps: Float = 1e-2
        for (k, input) in inputs.enumerated() where differentiable?.contains(k) ?? true {
            let analytic = variables[k].grad ?? Matrix(rows: input.rows, columns: input.columns)
            for i in 0..<input.values.count {
                var plus = inputs, minus = inputs
                plus[k].values[i] += eps
                minus[k].values[i] -= eps
                let numeric = (loss(plus) - loss(minus)) / Double(2 * eps)
                let a = Double(analytic.values[i])
                #expect(abs(a - numeric) <= 2e-3 + 2e-2 * abs(numeric), "\(file): input \(k)[\(i)] analytic \(a) numeric \(numeric)")
            }
        }
    }

    func m(_ rows: Int, _ cols: Int, _ seed: UInt64, scale: Float = 1) -> Matrix {
        var x = Fixtures.randomMatrix(rows: rows, columns: cols, seed: seed)
        for i in 0..<x.values.count { x.values[i] *= scale }
        return x
    }

    @Test func matmul() { check([m(3, 4, 1), m(4, 2, 2)]) { t, v in t.matmul(v[0], v[1]) } }

    @Test func sqrt() {
        var x = m(3, 4, 5)
        for i in x.values.indices { x.values[i] = 0.2 + x.values[i] * x.values[i] }   // away from 0, where √ has no slope
        check([x]) { t, v in t.sqrt(v[0]) }
    }

    @Test func maximum() {
        check([m(3, 4, 3), m(3, 4, 4)]) { t, v in t.maximum(v[0], v[1]) }
        // A tie sends the whole gradient to the first operand, as torch's max index does.
        let tape = Tape(compute: .serial)
        let a = tape.parameter(Matrix(rows: 1, columns: 2, values: [1, 2])), b = tape.parameter(Matrix(rows: 1, columns: 2, values: [1, 3]))
        tape.backward(tape.mean(tape.maximum(a, b)))
        #expect(a.grad!.values == [0.5, 0] && b.grad!.values == [0, 0.5])
    }

    @Test func linear() {
        // 11 output columns: one full vector of eight lanes and a partial one.
        check([m(3, 4, 1), m(4, 11, 2), m(1, 11, 12)]) { t, v in t.linear(v[0], v[1], v[2]) }
        // A weight used by two products: the second gradient is added in place by the GEMM.
        check([m(3, 4, 1), m(4, 4, 2)]) { t, v in t.matmul(t.linear(v[0], v[1], t.constant(Matrix(rows: 1, columns: 4))), v[1]) }
    }

    @Test func sparseLinear() {
        // Row 0 has six entries (a group of four, then two singles); row 1 has one.
        let x = SparseMatrix(rows: 3, columns: 7, rowIndices: [0, 0, 0, 0, 0, 0, 1, 2, 2],
                             columnIndices: [0, 1, 2, 3, 5, 6, 1, 2, 3], values: [0.5, -1, 2, 1, 0.25, 1.5, -0.75, 1, 0.5])
        check([m(7, 11, 3), m(1, 11, 13)]) { t, v in t.linear(x, v[0], v[1]) }
    }

    @Test func graphPropagationAndNorm() {
        // A symmetric sparse a (its own transpose), and a non-symmetric one with its transpose.
        let sym = SparseMatrix(rows: 3, columns: 3, rowIndices: [0, 1, 1, 2, 0, 2], columnIndices: [1, 0, 2, 1, 0, 2], values: [0.5, 0.5, -1, -1, 2, 0.25])
        check([m(3, 9, 27)]) { t, v in t.matmul(sym, v[0], transposed: sym) }
        let a = SparseMatrix(rows: 2, columns: 3, rowIndices: [0, 0, 1], columnIndices: [0, 2, 1], values: [1, -2, 3])
        check([m(3, 4, 28)]) { t, v in t.matmul(a, v[0], transposed: a.transposed()) }
        check([m(3, 5, 29)]) { t, v in t.norm(v[0]) }
        // The layer mean of propagations, K = 0…3, against central differences (A symmetric,
        // and a non-symmetric square one with its transpose).
        let square = SparseMatrix(rows: 3, columns: 3, rowIndices: [0, 0, 1, 2], columnIndices: [1, 2, 2, 0], values: [0.5, -1.5, 2, 0.75])
        for layers in 0...3 {
            check([m(3, 9, 35 + UInt64(layers))]) { t, v in t.propagationMean(sym, v[0], layers: layers, transposed: sym) }
            check([m(3, 9, 39 + UInt64(layers))]) { t, v in t.propagationMean(square, v[0], layers: layers, transposed: square.transposed()) }
        }
        // Row dots of listed rows (repeats; two tables, and one table on both sides) against
        // central differences, and equal to the dots of the gathered rows.
        check([m(4, 11, 32), m(3, 11, 33)]) { t, v in t.rowDot(v[0], rows: [1, 3, 1], v[1], rows: [0, 2, 2]) }
        check([m(5, 9, 34)]) { t, v in t.rowDot(v[0], rows: [0, 4, 2], v[0], rows: [3, 4, 0]) }
        let (left, right) = (Variable(m(4, 11, 32)), Variable(m(3, 11, 33)))
        let tape = Tape(compute: .serial)
        #expect(tape.rowDot(left, rows: [1, 3, 1], right, rows: [0, 2, 2]).value
                == tape.rowDot(tape.gather(left, rows: [1, 3, 1]), tape.gather(right, rows: [0, 2, 2])).value)
        // Listed rows, one repeated, equal the norm of the gathered rows, value and gradient.
        check([m(4, 11, 31)]) { t, v in t.norm(v[0], rows: [2, 0, 2]) }
        let table = Variable(m(4, 11, 31))
        #expect(abs(Tape(compute: .serial).norm(table, rows: [2, 0, 2]).value.values[0]
                    - Tape(compute: .serial).norm(Tape(compute: .serial).gather(table, rows: [2, 0, 2])).value.values[0]) < 1e-5)
        check([m(2, 3, 30), m(4, 3, 31)]) { t, v in t.concatRows(v[0], v[1]) }
        #expect(Tape(compute: .serial).norm(Variable(Matrix(rows: 1, columns: 2, values: [3, 4]))).value.values == [5])
    }

    @Test func reluAndConcat() {
        // Inputs kept 0.1 away from the kink, so central differences of step 1e-2 see one side.
        var x = m(3, 11, 21)
        for i in x.values.indices { x.values[i] += x.values[i] < 0 ? -0.1 : 0.1 }
        check([x]) { t, v in t.relu(v[0]) }
        check([m(3, 4, 22), m(3, 7, 23), m(3, 2, 24)]) { t, v in t.concatColumns(v) }
        let a = m(2, 2, 25), b = m(2, 3, 26)
        let c = Tape(compute: .serial).concatColumns([Variable(a), Variable(b)]).value
        #expect(c.columns == 5 && c[1, 1] == a[1, 1] && c[1, 4] == b[1, 2] && c[0, 2] == b[0, 0])
        #expect(Tape(compute: .serial).relu(Variable(Matrix(rows: 1, columns: 3, values: [-1, 0, 2]))).value.values == [0, 0, 2])
    }

    @Test func sliceProducts() {
        // Weighted pairs within and across parts, an 11-wide slice (partial lane), rows split over two workers.
        let pairs = [SlicePair(0, 0, 1, 11, weight: 0.5), SlicePair(0, 11, 2, 0, weight: -2), SlicePair(1, 0, 1, 11, weight: 1.5)]
        check([m(3, 22, 32), m(3, 22, 33), m(3, 11, 34)]) { t, v in t.sliceProducts(v, pairs, width: 11) }
        check([m(3, 22, 32), m(3, 22, 33), m(3, 11, 34)]) { t, v in t.sliceProducts(v, pairs, width: 11, summed: false) }
        // 3,000 rows: several chunks of rows, each worker its own; forward by hand, gradients equal to one worker's.
        let parts = [m(3000, 22, 35), m(3000, 22, 36), m(3000, 11, 37)]
        let summed = Tape(compute: Compute(workers: 2, blasThreads: 1)).sliceProducts(parts.map { Variable($0) }, pairs, width: 11).value
        let apart = Tape(compute: Compute(workers: 2, blasThreads: 1)).sliceProducts(parts.map { Variable($0) }, pairs, width: 11, summed: false).value
        #expect(summed.rows == 3000 && summed.columns == 11 && apart.rows == 3000 && apart.columns == 33)
        func gradients(_ compute: Compute, summed: Bool) -> [Matrix] {
            let tape = Tape(compute: compute), leaves = parts.map { tape.parameter($0) }
            let out = tape.sliceProducts(leaves, pairs, width: 11, summed: summed)
            tape.backward(tape.mean(tape.mul(out, tape.constant(Fixtures.randomMatrix(rows: 3000, columns: out.value.columns, seed: 38)))))
            return leaves.map { $0.grad! }
        }
        for summed in [true, false] {
            #expect(gradients(Compute(workers: 2, blasThreads: 1), summed: summed).map(\.values) == gradients(.serial, summed: summed).map(\.values))
        }
        for r in stride(from: 0, to: 3000, by: 37) {
            for k in 0..<11 {
                let terms = pairs.map { $0.weight * parts[$0.a][r, $0.aStart + k] * parts[$0.b][r, $0.bStart + k] }
                #expect(abs(summed[r, k] - terms.reduce(0, +)) < 1e-5)
                for (i, term) in terms.enumerated() { #expect(abs(apart[r, i * 11 + k] - term) < 1e-5) }
            }
        }
    }

    @Test func scoreMLP() {
        // d = 11 and a = 13 (two blocks of eight) or 33 (four blocks, then one): neither a multiple
        // of the lanes; with and without the bias.
        // (Three rows at a = 33: the fourth row puts a pre-activation within the differences' step of ReLU's kink.)
        for (rows, a) in [(4, 13), (3, 33)] {
            check([m(rows, 11, 60), m(11, a, 61), m(1, a, 62), m(a, 1, 63)]) { t, v in t.scoreMLP(v[0], weight: v[1], bias: v[2], output: v[3]) }
            check([m(rows, 11, 60), m(11, a, 61), m(a, 1, 63)]) { t, v in t.scoreMLP(v[0], weight: v[1], output: v[2]) }
        }
        // 5,000 rows (several chunks), a = 25 (AFM's four full blocks) and 33: the value and every
        // gradient equal the composed layers', and do not depend on the worker count.
        for a in [25, 33] {
            let inputs = [m(5000, 11, 64), m(11, a, 65), m(1, a, 66), m(a, 1, 67)], r = m(5000, 1, 68)
            func run(_ compute: Compute, fused: Bool) -> [Matrix] {
                let tape = Tape(compute: compute), v = inputs.map { tape.parameter($0) }
                let out = fused ? tape.scoreMLP(v[0], weight: v[1], bias: v[2], output: v[3]) : tape.matmul(tape.relu(tape.linear(v[0], v[1], v[2])), v[3])
                tape.backward(tape.mean(tape.mul(out, tape.constant(r))))
                return [out.value] + v.map { $0.grad! }
            }
            expectFusedIsComposed("scoreMLP (a = \(a))", run)
        }
    }

    @Test func pairAttention() {
        // Three fields of d = 11 (a partial lane), a = 13; pairs across fields and one of a field
        // with itself (e_f ⊙ e_f: both slots of the pullback land on one field).
        let pairs = [(0, 1), (0, 2), (1, 2), (2, 2)]
        check([m(3, 33, 70), m(11, 13, 71), m(13, 1, 72), m(3, 11, 73)]) { t, v in
            t.pairAttention(v[0], width: 11, pairs: pairs, weight: v[1], output: v[2], values: v[3])
        }
        // 300 rows (several chunks) of AFM's shape, 7 fields of 10 and all 21 pairs, a = 25 (one
        // 32-wide panel) and 40 (a second, partial one): the value and every gradient equal the
        // composed ops', and do not depend on the worker count.
        let all = (0..<7).flatMap { f in ((f + 1)..<7).map { (f, $0) } }
        for a in [25, 40] {
            let inputs = [m(300, 70, 74), m(10, a, 75), m(a, 1, 76), m(300, 10, 77)], r = m(300, 1, 78)
            func run(_ compute: Compute, fused: Bool) -> [Matrix] {
                let tape = Tape(compute: compute), v = inputs.map { tape.parameter($0) }
                let out = fused ? tape.pairAttention(v[0], width: 10, pairs: all, weight: v[1], output: v[2], values: v[3])
                    : tape.composedPairAttention(v[0], width: 10, pairs: all, weight: v[1], output: v[2], values: v[3])
                tape.backward(tape.mean(tape.mul(out, tape.constant(r))))
                return [out.value] + v.map { $0.grad! }
            }
            expectFusedIsComposed("pairAttention (a = \(a))", run)
        }
        // No pairs: the pooling is 0 and passes no gradient.
        let tape = Tape(compute: .serial), v = [m(2, 20, 79), m(10, 4, 80), m(4, 1, 81), m(2, 10, 82)].map { tape.parameter($0) }
        let out = tape.pairAttention(v[0], width: 10, pairs: [], weight: v[1], output: v[2], values: v[3])
        tape.backward(tape.mean(out))
        #expect(out.value.values == [0, 0] && v.allSatisfy { $0.grad.map { $0.values.allSatisfy { $0 == 0 } } ?? true })
    }

    /// A fused op's value and gradients (`run(compute, fused)`) equal its composed ops', to 1e-4
    /// of each result's scale, and are the same on one worker and two.
    func expectFusedIsComposed(_ name: String, _ run: (Compute, Bool) -> [Matrix]) {
        let fused = run(Compute(workers: 2, blasThreads: 1), true), composed = run(.serial, false)
        #expect(fused.map(\.values) == run(.serial, true).map(\.values))
        for (x, y) in zip(fused, composed) {
            let scale = y.values.map(abs).max()!
            #expect(x.rows == y.rows && x.columns == y.columns && scale > 0)
            #expect(zip(x.values, y.values).allSatisfy { abs($0 - $1) <= 1e-4 * scale + 1e-7 }, "\(name): fused and composed differ")
        }
    }

    @Test func sliceDots() {
        // Three parts, pairs within one part and across parts, an 11-wide slice (partial lane).
        let pairs = [SlicePair(0, 0, 1, 11), SlicePair(0, 11, 2, 0), SlicePair(1, 0, 1, 11)]
        check([m(3, 22, 16), m(3, 22, 17), m(3, 11, 18)]) { t, v in t.sliceDots(v, pairs, width: 11) }
        let weighted = pairs.map { SlicePair($0.a, $0.aStart, $0.b, $0.bStart, weight: 0.7) }
        check([m(3, 22, 16), m(3, 22, 17), m(3, 11, 18)]) { t, v in t.sliceDots(v, weighted, width: 11) }
        let parts = [m(3, 22, 16), m(3, 22, 17), m(3, 11, 18)].map { Variable($0) }, tape = Tape(compute: .serial)
        let plain = tape.sliceDots(parts, pairs, width: 11).value, scaled = tape.sliceDots(parts, weighted, width: 11).value
        for r in 0..<3 { #expect(abs(scaled[r, 0] - 0.7 * plain[r, 0]) < 1e-5) }
        // Forward by hand for one pair.
        let a = m(2, 4, 19), b = m(2, 6, 20)
        let out = Tape(compute: .serial).sliceDots([Variable(a), Variable(b)], [SlicePair(0, 1, 1, 3)], width: 3).value
        for r in 0..<2 {
            let expected = (0..<3).reduce(Float(0)) { $0 + a[r, 1 + $1] * b[r, 3 + $1] }
            #expect(abs(out[r, 0] - expected) < 1e-5)
        }
    }

    @Test func pooledLookup() {
        // Two fields over one 7-row table; entity rows repeat (the same user twice in a batch),
        // one entity pools nothing (an empty sequence), and 11 columns leave a partial lane.
        let a = SparseMatrix(rows: 3, columns: 7, rowIndices: [0, 0, 2], columnIndices: [1, 3, 6], values: [0.5, 0.5, 2])
        let b = SparseMatrix(rows: 2, columns: 7, rowIndices: [0, 1, 1, 1], columnIndices: [0, 1, 4, 5], values: [1, -1, 0.25, 3])
        check([m(7, 11, 14)]) { t, v in t.pooledLookup(v[0], [(a, [2, 0, 2, 1]), (b, [1, 1, 0, 0])]) }
        // The forward value against the dense product, by hand for one row: row 0 = a[2]·T + b[1]·T.
        let table = m(7, 3, 15)
        let out = Tape(compute: .serial).pooledLookup(Variable(table), [(a, [2]), (b, [1])]).value
        for j in 0..<3 {
            let expected = 2 * table[6, j] - table[1, j] + 0.25 * table[4, j] + 3 * table[5, j]
            #expect(abs(out[0, j] - expected) < 1e-5)
        }
    }

    @Test func biInteraction() {
        // Two fields over one 7-row table (weighted bags, one empty), rows repeating, 11 columns.
        let a = SparseMatrix(rows: 3, columns: 7, rowIndices: [0, 0, 2], columnIndices: [1, 3, 6], values: [0.5, 0.5, 2])
        let b = SparseMatrix(rows: 2, columns: 7, rowIndices: [0, 1, 1, 1], columnIndices: [0, 1, 4, 5], values: [1, -1, 0.25, 3])
        check([m(7, 11, 19)]) { t, v in t.biInteraction(v[0], [(a, [2, 0, 2, 1]), (b, [1, 1, 0, 0])]) }
        // Against the composed ops it replaces (lookups, squares, sums), value and table gradient, 600 rows on two workers.
        let rowsA = (0..<600).map { Int32($0 % 3) }, rowsB = (0..<600).map { Int32($0 * 7 % 2) }, table = m(7, 10, 20), r = m(600, 10, 21)
        func run(_ fused: Bool) -> (Matrix, Matrix) {
            let tape = Tape(compute: Compute(threads: 2)), t = tape.parameter(table)
            let out: Variable
            if fused {
                out = tape.biInteraction(t, [(a, rowsA), (b, rowsB)])
            } else {
                let e = [tape.pooledLookup(t, [(a, rowsA)]), tape.pooledLookup(t, [(b, rowsB)])], sum = tape.add(e[0], e[1])
                out = tape.affine(tape.sub(tape.mul(sum, sum), tape.add(tape.mul(e[0], e[0]), tape.mul(e[1], e[1]))), scale: 0.5)
            }
            tape.backward(tape.mean(tape.mul(out, tape.constant(r))))
            return (out.value, t.grad!)
        }
        let (fused, composed) = (run(true), run(false))
        #expect(fused.0.rows == 600 && fused.0.columns == 10 && fused.1.rows == 7 && fused.1.columns == 10)
        #expect(zip(fused.0.values, composed.0.values).allSatisfy { abs($0 - $1) < 1e-5 })
        #expect(zip(fused.1.values, composed.1.values).allSatisfy { abs($0 - $1) < 1e-6 })
    }

    @Test func pooledLookupsSideBySide() {
        let a = SparseMatrix(rows: 3, columns: 7, rowIndices: [0, 0, 2], columnIndices: [1, 3, 6], values: [0.5, 0.5, 2])
        let b = SparseMatrix(rows: 2, columns: 7, rowIndices: [0, 1, 1, 1], columnIndices: [0, 1, 4, 5], values: [1, -1, 0.25, 3])
        check([m(7, 11, 16)]) { t, v in t.pooledLookups(v[0], sideBySide: [(a, [2, 0, 2, 1]), (b, [1, 1, 0, 0])]) }
        // Bit for bit what separate lookups and a concatenation give, value and table gradient,
        // over 700 rows (three chunks of 256: both workers run) on two workers and on one, with
        // tables 10 wide (a partial lane) and 64 wide (the AVX2 build's full block).
        let rowsA = (0..<700).map { Int32($0 % 3) }, rowsB = (0..<700).map { Int32($0 * 7 % 2) }
        for (compute, width) in [(Compute.serial, 10), (Compute(threads: 2), 10), (Compute(threads: 2), 64)] {
            let table = m(7, width, 17), weights = m(700, 2 * width, 18)
            func run(_ fused: Bool) -> (Matrix, Matrix) {
                let tape = Tape(compute: compute), t = tape.parameter(table)
                let out = fused ? tape.pooledLookups(t, sideBySide: [(a, rowsA), (b, rowsB)])
                    : tape.concatColumns([tape.pooledLookup(t, [(a, rowsA)]), tape.pooledLookup(t, [(b, rowsB)])])
                tape.backward(tape.mean(tape.mul(out, tape.constant(weights))))
                return (out.value, t.grad!)
            }
            let (fused, separate) = (run(true), run(false))
            #expect(fused.0.values == separate.0.values && fused.1.values == separate.1.values, "\(compute)")
        }
    }

    @Test func dropoutDrawsItsMaskOnce() {
        // x ⊙ the seed's mask (each entry 0 or 1/(1 − rate)) and the pullback g ⊙ mask, bit for bit
        // against the mask and a product as separate ops, over 5 chunks of the mask less five (a
        // group of four on one worker, a partial one on the other); a gradient check on a small input.
        check([m(4, 5, 30)]) { t, v in t.dropout(v[0], rate: 0.4, seed: 7) }
        let x = m(5, 32_767, 31), g = m(5, 32_767, 32)
        let mask = Matrix.dropoutMask(rows: 5, columns: 32_767, rate: 0.25, seed: 9, compute: Compute(threads: 2))
        let tape = Tape(compute: Compute(threads: 2)), v = tape.parameter(x)
        let out = tape.dropout(v, rate: 0.25, seed: 9)
        tape.backward(tape.mean(tape.mul(out, tape.constant(g))))
        let scale = Matrix(rows: 5, columns: 32_767, repeating: 1 / Float(5 * 32_767))   // the mean's pullback
        #expect(out.value.values == x.multiplied(by: mask, compute: .serial).values)
        #expect(v.grad!.values == scale.multiplied(by: g, compute: .serial).multiplied(by: mask, compute: .serial).values)
        #expect(Set(mask.values) == [0, 1 / 0.75])
        // The mask is drawn again, never stored: either build, any worker count, the same product.
        // Kept as bits, the mask gives the same products in either build.
        for kernels in [KernelSet.baseline, .avx2] {
            for compute in [Compute.serial, Compute(threads: 2)] {
                #expect(x.droppedOut(rate: 0.25, seed: 9, compute: compute, kernels: kernels).values == out.value.values, "\(kernels) \(compute)")
                let (value, kept) = x.droppedOutKeepingMask(rate: 0.25, seed: 9, compute: compute, kernels: kernels)
                #expect(value.values == out.value.values && kept.count == (5 * 32_767 + 7) / 8, "\(kernels) \(compute)")
                #expect(g.droppedOut(kept: kept, rate: 0.25, compute: compute, kernels: kernels).values
                        == g.multiplied(by: mask, compute: .serial).values, "\(kernels) \(compute)")
            }
        }
        // Fewer than eight entries, and a short chunk beside full ones in one group of lanes.
        for (rows, columns) in [(1, 5), (2, 40_000)] {
            let x = m(rows, columns, 33), mask = Matrix.dropoutMask(rows: rows, columns: columns, rate: 0.5, seed: 3, compute: .serial)
            for kernels in [KernelSet.baseline, .avx2] {
                let (value, kept) = x.droppedOutKeepingMask(rate: 0.5, seed: 3, compute: Compute(threads: 2), kernels: kernels)
                #expect(value.values == x.multiplied(by: mask, compute: .serial).values, "\(rows) × \(columns) \(kernels)")
                #expect(x.droppedOut(kept: kept, rate: 0.5, compute: .serial, kernels: kernels).values == value.values, "\(rows) × \(columns) \(kernels)")
            }
        }
    }

    @Test func addSubMulAffine() {
        check([m(2, 3, 4), m(2, 3, 5)]) { t, v in t.add(v[0], v[1]) }
        check([m(2, 3, 4), m(2, 3, 5)]) { t, v in t.sub(v[0], v[1]) }
        check([m(2, 3, 4), m(2, 3, 5)]) { t, v in t.mul(v[0], v[1]) }
        check([m(2, 3, 4)]) { t, v in t.affine(v[0], scale: -1.5, shift: 0.3) }
    }

    @Test func broadcastsAndReductions() {
        check([m(3, 4, 8)]) { t, v in t.scaleRows(v[0], by: [0.5, -2, 3]) }
        check([m(3, 5, 9)]) { t, v in t.columns(v[0], 1..<4) }
        check([m(3, 4, 10)]) { t, v in t.sumRows(v[0]) }
        check([m(3, 4, 11)]) { t, v in t.mean(v[0]) }
    }

    @Test func nonlinearities() {
        check([m(3, 4, 12, scale: 2)]) { t, v in t.tanh(v[0]) }
        check([m(3, 4, 13, scale: 2)]) { t, v in t.swish(v[0]) }
        check([m(3, 4, 14, scale: 3)]) { t, v in t.logSigmoid(v[0]) }
        check([m(3, 5, 17, scale: 3)]) { t, v in t.sigmoid(v[0]) }
        check([m(3, 4, 15)]) { t, v in t.exp(v[0]) }
        check([m(3, 4, 16)]) { t, v in t.square(v[0]) }
    }

    @Test func layerNorm() {
        check([m(3, 5, 17, scale: 2), m(1, 5, 18), m(1, 5, 19)]) { t, v in t.layerNorm(v[0], scale: v[1], shift: v[2], eps: 0.1) }
    }

    /// LN(a + keep ⊙ y) and relu(LN(·)) as one op: its gradients against central differences
    /// (relu away from its kink: β shifts outputs off 0), and value and every gradient equal to
    /// the chain of separate ops it replaces (11 columns: a partial lane group).
    @Test func fusedLayerNorm() {
        let keep = Matrix(rows: 4, columns: 11, values: (0..<44).map { $0 % 3 == 0 ? 0 : 1.25 })
        check([m(4, 11, 40, scale: 2), m(4, 11, 41), m(1, 11, 42), m(1, 11, 43)]) { t, v in
            t.layerNorm(v[0], plus: v[1], keep: keep, scale: v[2], shift: v[3], eps: 0.1)
        }
        var shift = m(1, 11, 45)
        for i in shift.values.indices { shift.values[i] += shift.values[i] < 0 ? -0.3 : 0.3 }
        check([m(4, 11, 44, scale: 2), m(4, 11, 46), m(1, 11, 47), shift]) { t, v in
            t.layerNorm(v[0], plus: v[1], scale: v[2], shift: v[3], eps: 0.1, relu: true)
        }
        let inputs = [m(4, 11, 48, scale: 2), m(4, 11, 49), m(1, 11, 50), m(1, 11, 51)], r = m(4, 11, 52)
        func run(fused: Bool) -> (Matrix, [Matrix]) {
            let tape = Tape(compute: .serial), v = inputs.map { tape.parameter($0) }
            let out = fused ? tape.layerNorm(v[0], plus: v[1], keep: keep, scale: v[2], shift: v[3], eps: 1e-5, relu: true)
                : tape.relu(tape.layerNorm(tape.add(tape.mul(v[1], tape.constant(keep)), v[0]), scale: v[2], shift: v[3], eps: 1e-5))
            tape.backward(tape.mean(tape.mul(out, tape.constant(r))))
            return (out.value, v.map { $0.grad! })
        }
        let (fused, chain) = (run(fused: true), run(fused: false))
        #expect(fused.0.values == chain.0.values)
        for (a, b) in zip(fused.1, chain.1) { #expect(zip(a.values, b.values).allSatisfy { abs($0 - $1) <= 1e-6 }) }
    }

    /// Layer norm's one-pass pullback (AVX2+FMA) against the baseline's composed passes: the
    /// column sums, dx and the residual's dx ⊙ keep within float rounding, 64 and 13 columns, over
    /// 3,000 rows (several chunks of rows, two workers), with and without relu, keep and dx.
    @Test func layerNormPullbackBuildsAgree() {
        guard KernelSet.available.contains(.avx2) else { return }
        for n in [64, 13] {
            let rows = 3000, g = m(rows, n, 53), xn = m(rows, n, 54), gamma = m(1, n, 55)
            let inverse = Matrix(rows: rows, columns: 1, values: (0..<rows).map { 0.5 + Float($0 % 7) / 7 })
            let keep = Matrix(rows: rows, columns: n, values: (0..<(rows * n)).map { $0 % 3 == 0 ? 0 : 1.25 })
            for (relu, withKeep, inputs) in [(false, false, true), (true, true, true), (true, false, false)] {
                func run(_ kernels: KernelSet) -> [Matrix] {
                    let d = LayerNormKernels.backward(g, output: relu ? m(rows, n, 56) : nil, normalized: xn, inverseStd: inverse, scale: gamma,
                                                      keep: withKeep ? keep : nil, inputs: inputs, compute: Compute(threads: 2), kernels: kernels)
                    return [d.sums] + [d.dx, d.dy].compactMap { $0 }
                }
                let (baseline, avx2) = (run(.baseline), run(.avx2))
                #expect(baseline.count == avx2.count && baseline.count == 1 + (inputs ? 1 : 0) + (withKeep ? 1 : 0))
                for (x, y) in zip(baseline, avx2) {
                    #expect(zip(x.values, y.values).allSatisfy { abs($0 - $1) <= 2e-5 * max(1, abs($0)) }, "n \(n), relu \(relu), keep \(withKeep)")
                }
            }
        }
    }

    @Test func compressedInteraction() {
        check([m(3, 2, 28), m(3, 4, 29), m(8, 3, 30), m(1, 3, 31)]) { t, v in t.compressedInteraction(v[0], v[1], weight: v[2], bias: v[3]) }
        // Seeds whose pre-activations stay off relu's kink by more than the difference step.
        check([m(3, 3, 42), m(9, 2, 43), m(1, 2, 44)]) { t, v in t.compressedInteraction(v[0], v[0], weight: v[1], bias: v[2]) }   // layer 0: x = x₀
        // One row: [2, 3] ⊗ [1, 5, 7] = [2, 10, 14, 3, 15, 21]; column 0 of W picks entries 0 and 4, column 1 negates entry 5.
        var w = Matrix(rows: 6, columns: 2)
        (w[0, 0], w[4, 0], w[5, 1]) = (1, 1, -1)
        let tape = Tape(compute: .serial)
        let (x, x0) = (Matrix(rows: 1, columns: 2, values: [2, 3]), Matrix(rows: 1, columns: 3, values: [1, 5, 7]))
        let out = tape.compressedInteraction(tape.constant(x), tape.constant(x0), weight: tape.constant(w),
                                             bias: tape.constant(Matrix(rows: 1, columns: 2, values: [0.5, 1])))
        #expect(out.value.values == [17.5, 0])   // 2 + 15 + 0.5; relu(−21 + 1)
    }

    /// More rows than a block of the kernel (192: here 500, the last block short), x one lane
    /// group and a tail wide: the value and all four gradients against the sums written out in
    /// Double, the same bits on one worker and two, and OpenBLAS's products (`baseline`) within
    /// rounding of the register kernel's.
    @Test func compressedInteractionOverManyBlocks() {
        let (rows, h, f, n) = (500, 11, 7, 6)
        let (x, x0, w, b, g) = (m(rows, h, 35), m(rows, f, 36), m(h * f, n, 37), m(1, n, 38), m(rows, n, 39))
        func run(_ compute: Compute, _ kernels: KernelSet = .current) -> [Matrix] {
            let z = CINKernels.forward(x, x0, weight: w, bias: b, compute: compute, kernels: kernels)
            let d = CINKernels.backward(g, output: z, x, x0, weight: w, inputs: (true, true), weight: true, bias: true, compute: compute,
                                        kernels: kernels)
            return [z, d.x!, d.x0!, d.weight!, d.bias!]
        }
        let serial = run(.serial)
        #expect(zip(serial, run(Compute(threads: 2))).allSatisfy { $0.values == $1.values })
        var z = [Double](repeating: 0, count: rows * n), dx = [Double](repeating: 0, count: rows * h), dx0 = [Double](repeating: 0, count: rows * f)
        var dw = [Double](repeating: 0, count: h * f * n), db = [Double](repeating: 0, count: n)
        for r in 0..<rows {
            for j in 0..<n {
                var s = Double(b[0, j])
                for a in 0..<h { for c in 0..<f { s += Double(x[r, a]) * Double(x0[r, c]) * Double(w[a * f + c, j]) } }
                z[r * n + j] = max(0, s)
                guard s > 0 else { continue }
                let gj = Double(g[r, j])
                db[j] += gj
                for a in 0..<h {
                    for c in 0..<f {
                        dw[(a * f + c) * n + j] += gj * Double(x[r, a]) * Double(x0[r, c])
                        dx[r * h + a] += gj * Double(w[a * f + c, j]) * Double(x0[r, c])
                        dx0[r * f + c] += gj * Double(w[a * f + c, j]) * Double(x[r, a])
                    }
                }
            }
        }
        for (got, expected) in zip(serial, [z, dx, dx0, dw, db]) {
            #expect(zip(got.values, expected).allSatisfy { abs(Double($0) - $1) < 1e-3 * max(1, abs($1)) })
        }
        // Only some gradients asked for: the same bits for those, nil for the rest.
        let some = CINKernels.backward(g, output: serial[0], x, x0, weight: w, inputs: (false, true), weight: false, bias: true, compute: .serial)
        #expect(some.x == nil && some.weight == nil && some.x0?.values == serial[2].values && some.bias?.values == serial[4].values)
        let weightOnly = CINKernels.backward(g, output: serial[0], x, x0, weight: w, inputs: (false, false), weight: true, bias: false, compute: .serial)
        #expect(weightOnly.x0 == nil && weightOnly.bias == nil && weightOnly.weight?.values == serial[3].values)
        guard KernelSet.available.contains(.avx2) else { return }
        for (p, q) in zip(run(.serial, .baseline), serial) { #expect(zip(p.values, q.values).allSatisfy { abs($0 - $1) <= 1e-4 * max(1, abs($0)) }) }
    }

    @Test func batchNorm() {
        // The batch's own statistics (training) and fixed ones (evaluation).
        check([m(6, 3, 22, scale: 2), m(1, 3, 23), m(1, 3, 24)]) { t, v in t.batchNorm(v[0], scale: v[1], shift: v[2], eps: 0.1).output }
        let fixed = (mean: Matrix(rows: 1, columns: 3, values: [0.5, -1, 2]), variance: Matrix(rows: 1, columns: 3, values: [1, 0.25, 4]))
        check([m(4, 3, 25, scale: 2), m(1, 3, 26), m(1, 3, 27)]) { t, v in
            t.batchNorm(v[0], scale: v[1], shift: v[2], eps: 0.1, statistics: fixed).output
        }
        let fixedWide = (mean: m(1, 21, 43), variance: Matrix(rows: 1, columns: 21, values: (0..<21).map { 0.5 + Float($0) / 10 }))
        // 21 columns: two workers' blocks of the column sums (16 and 5 columns), partial lanes at the end of each row.
        check([m(5, 21, 28, scale: 2), m(1, 21, 29), m(1, 21, 30)]) { t, v in t.batchNorm(v[0], scale: v[1], shift: v[2], eps: 0.1).output }
        // 4,000 rows over two workers: the same outputs and gradients as one worker's (several chunks of rows and of columns).
        let big = m(4000, 21, 39, scale: 2), upstream = Fixtures.randomMatrix(rows: 4000, columns: 21, seed: 40)
        func run(_ compute: Compute, fixed: Bool) -> [[Float]] {
            let tape = Tape(compute: compute)
            let x = tape.parameter(big), g = tape.parameter(m(1, 21, 41)), b = tape.parameter(m(1, 21, 42))
            let y = tape.batchNorm(x, scale: g, shift: b, eps: 0.1, statistics: fixed ? fixedWide : nil).output
            tape.backward(tape.mean(tape.mul(y, tape.constant(upstream))))
            return [y.value.values, x.grad!.values, g.grad!.values, b.grad!.values]
        }
        for fixed in [false, true] { #expect(run(Compute(workers: 2, blasThreads: 1), fixed: fixed) == run(.serial, fixed: fixed)) }
        // Split over two workers: the same statistics as Double sums over each column.
        let wide = m(37, 21, 31, scale: 3)
        let (_, means, variances) = Tape(compute: Compute(workers: 2, blasThreads: 1)).batchNorm(
            Variable(wide), scale: Variable(Matrix(rows: 1, columns: 21, values: [Float](repeating: 1, count: 21))),
            shift: Variable(Matrix(rows: 1, columns: 21)), eps: 0)
        for j in 0..<21 {
            let column = (0..<37).map { Double(wide[$0, j]) }, mu = column.reduce(0, +) / 37
            #expect(abs(Double(means.values[j]) - mu) < 1e-5)
            #expect(abs(Double(variances.values[j]) - column.map { ($0 - mu) * ($0 - mu) }.reduce(0, +) / 36) < 1e-4)
        }
        // Column 0 holds 1, 2, 3, 6: mean 3, biased variance 3.5, unbiased 14 / 3.
        let x = Matrix(rows: 4, columns: 2, values: [1, 0, 2, 0, 3, 0, 6, 0])
        let tape = Tape(compute: .serial)
        let (y, mean, variance) = tape.batchNorm(tape.constant(x), scale: tape.constant(Matrix(rows: 1, columns: 2, values: [2, 1])),
                                                 shift: tape.constant(Matrix(rows: 1, columns: 2, values: [1, 5])), eps: 0)
        #expect(mean.values == [3, 0])
        #expect(abs(variance.values[0] - 14 / 3) < 1e-5 && variance.values[1] == 0)
        #expect(abs(y.value[3, 0] - (2 * 3 / Float(3.5).squareRoot() + 1)) < 1e-5)
    }

    @Test func batchNormActivated() {
        let fixed = (mean: m(1, 21, 43), variance: Matrix(rows: 1, columns: 21, values: (0..<21).map { 0.5 + Float($0) / 10 }))
        for f in [PointwiseActivation.relu, .tanh, .sigmoid] {
            // Against central differences: the batch's statistics and fixed ones, 21 columns (partial lanes, two column groups);
            // relu's kink is left to its own op's check, since the fused pullback is shown equal to the composed one below.
            if f != .relu {
                check([m(6, 21, 44, scale: 2), m(1, 21, 45), m(1, 21, 46)]) { t, v in
                    t.batchNorm(v[0], scale: v[1], shift: v[2], eps: 0.1, activation: f).output
                }
                check([m(4, 21, 47, scale: 2), m(1, 21, 48), m(1, 21, 49)]) { t, v in
                    t.batchNorm(v[0], scale: v[1], shift: v[2], eps: 0.1, activation: f, statistics: fixed).output
                }
            }
            // The fused op gives the composition's values and gradients to the bit, on one worker and on two.
            let x = m(4000, 21, 50, scale: 2), upstream = Fixtures.randomMatrix(rows: 4000, columns: 21, seed: 51)
            func run(_ compute: Compute, fused: Bool, statistics: (mean: Matrix, variance: Matrix)?) -> [[Float]] {
                let tape = Tape(compute: compute)
                let a = tape.parameter(x), g = tape.parameter(m(1, 21, 52)), b = tape.parameter(m(1, 21, 53))
                let y = fused
                    ? tape.batchNorm(a, scale: g, shift: b, eps: 0.1, activation: f, statistics: statistics).output
                    : f(tape.batchNorm(a, scale: g, shift: b, eps: 0.1, statistics: statistics).output, tape: tape)
                tape.backward(tape.mean(tape.mul(y, tape.constant(upstream))))
                return [y.value.values, a.grad!.values, g.grad!.values, b.grad!.values]
            }
            for statistics in [nil, fixed] {
                let composed = run(.serial, fused: false, statistics: statistics)
                #expect(run(.serial, fused: true, statistics: statistics) == composed, "\(f), fixed \(statistics != nil)")
                #expect(run(Compute(workers: 2, blasThreads: 1), fused: true, statistics: statistics) == composed, "\(f), two workers")
            }
        }
    }

    @Test func logSoftmaxAndSparseRowDot() {
        check([m(3, 5, 20, scale: 2)]) { t, v in t.logSoftmaxRows(v[0]) }
        let x = SparseMatrix(rows: 3, columns: 5, rowIndices: [0, 1, 1, 2], columnIndices: [4, 0, 2, 3], values: [1, 1, 0.5, 2])
        check([m(3, 5, 21)]) { t, v in t.sparseRowDot(t.logSoftmaxRows(v[0]), x) }
        check([m(3, 5, 21)]) { t, v in t.multinomialLogLikelihood(v[0], x) }
        // The fused op equals the composition it replaces.
        let a = Variable(m(3, 5, 34))
        let fused = Tape(compute: .serial).multinomialLogLikelihood(a, x).value,
            composed = Tape(compute: .serial).sparseRowDot(Tape(compute: .serial).logSoftmaxRows(a), x).value
        #expect(zip(fused.values, composed.values).allSatisfy { abs($0 - $1) < 1e-5 })
    }

    @Test func gaussianDensityAndLogSumExp() {
        check([m(2, 3, 22), m(2, 3, 23), m(2, 3, 24, scale: 0.5)]) { t, v in t.logNormalDensity(v[0], mean: v[1], logVariance: v[2]) }
        check([m(2, 3, 25), m(2, 3, 26), m(2, 3, 27)]) { t, v in t.logSumExp([v[0], v[1], v[2]]) }
    }

    @Test func rowOps() {
        check([m(3, 4, 35, scale: 2)]) { t, v in t.normalizeRows(v[0]) }
        check([m(3, 5, 36, scale: 2)]) { t, v in t.logSoftmaxRows(v[0]) }
        check([m(4, 3, 37), m(4, 1, 38)]) { t, v in t.scaleRows(v[0], by: v[1]) }
        check([m(2, 3, 39)]) { t, v in t.transpose(v[0]) }
        // A zero row stays zero (torch's eps clamp), and every other row has unit length.
        var a = m(3, 4, 40)
        for j in 0..<4 { a.values[4 + j] = 0 }
        let y = Tape(compute: .serial).normalizeRows(Variable(a)).value
        #expect(y.row(1).allSatisfy { $0 == 0 })
        for r in [0, 2] { #expect(abs(y.row(r).reduce(0) { $0 + $1 * $1 } - 1) < 1e-5) }
        // Rows of exp(log softmax) sum to 1.
        let s = Tape(compute: .serial).logSoftmaxRows(Variable(m(3, 5, 41, scale: 30))).value
        for r in 0..<3 { #expect(abs(s.row(r).reduce(0) { $0 + Foundation.exp($1) } - 1) < 1e-5) }
    }

    @Test func embeddings() {
        check([m(4, 3, 28)]) { t, v in t.gather(v[0], rows: [2, 0, 2, 3]) }   // row 2 twice: gradients add
        check([m(3, 4, 29), m(3, 4, 30)]) { t, v in t.rowDot(v[0], v[1]) }
    }

    @Test func aNodeUsedTwiceAccumulatesBothPaths() {
        // y = x ⊙ x through mul: dy/dx = 2x, which needs both pullbacks to add up.
        check([m(2, 3, 31)]) { t, v in t.mul(v[0], v[0]) }
    }

    @Test func constantsGetNoGradient() {
        let tape = Tape(compute: .serial)
        let a = tape.parameter(m(2, 2, 32)), b = tape.constant(m(2, 2, 33))
        tape.backward(tape.mean(tape.matmul(a, b)))
        #expect(a.grad != nil && b.grad == nil)
    }
}
