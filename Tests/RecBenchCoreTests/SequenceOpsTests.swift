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

    @Test func gruOverPackedSteps() {
        // Sequences of 4, 2 and 1 steps packed longest first: step counts 3, 2, 1, 1 (7 rows).
        ops.check([ops.m(7, 3, 58), ops.m(3, 6, 59), ops.m(2, 6, 60)]) { t, v in
            t.gru(v[0], wInput: v[1], wHidden: v[2], stepCounts: [3, 2, 1, 1])
        }
        // Each packed row equals the padded layout's row at the same (sequence, step): padding
        // after a sequence's end changes nothing before it.
        let packed = ops.m(7, 3, 61), wi = ops.m(3, 6, 62), wh = ops.m(2, 6, 63)
        let lengths = [4, 2, 1]
        var padded = Matrix(rows: 12, columns: 3, repeating: 0.5), packedRow = 0, places: [(Int, Int)] = []
        for t in 0..<4 {
            for r in 0..<3 where t < lengths[r] {
                for c in 0..<3 { padded[t * 3 + r, c] = packed[packedRow, c] }
                places.append((packedRow, t * 3 + r)); packedRow += 1
            }
        }
        let a = Tape(compute: .serial).gru(Variable(packed), wInput: Variable(wi), wHidden: Variable(wh), stepCounts: [3, 2, 1, 1]).value
        let b = Tape(compute: .serial).gru(Variable(padded), wInput: Variable(wi), wHidden: Variable(wh), steps: 4).value
        for (p, q) in places { for c in 0..<2 { #expect(abs(a[p, c] - b[q, c]) < 1e-6) } }
    }

    @Test func gruWithBiases() {
        // torch's b_i and b_h: b_h reaches step 0 (h₀ = 0), and b_hn sits inside r ⊙ (·).
        ops.check([ops.m(6, 3, 64), ops.m(3, 6, 65), ops.m(2, 6, 66), ops.m(1, 6, 67), ops.m(1, 6, 68)]) { t, v in
            t.gru(v[0], wInput: v[1], wHidden: v[2], biases: (v[3], v[4]), stepCounts: [2, 2, 1, 1])
        }
        // One step, by hand: n = tanh(x W_in + b_in + r ⊙ b_hn) with h₀ = 0.
        let x = ops.m(1, 1, 69), wi = ops.m(1, 3, 70), wh = ops.m(1, 3, 71), bi = ops.m(1, 3, 72), bh = ops.m(1, 3, 73)
        let out = Tape(compute: .serial).gru(Variable(x), wInput: Variable(wi), wHidden: Variable(wh), biases: (Variable(bi), Variable(bh)),
                                             stepCounts: [1]).value
        func sigmoid(_ v: Float) -> Float { 1 / (1 + Foundation.exp(-v)) }
        let r = sigmoid(x[0, 0] * wi[0, 0] + bi[0, 0] + bh[0, 0]), z = sigmoid(x[0, 0] * wi[0, 1] + bi[0, 1] + bh[0, 1])
        let n = Foundation.tanh(x[0, 0] * wi[0, 2] + bi[0, 2] + r * bh[0, 2])
        #expect(abs(out[0, 0] - (1 - z) * n) < 1e-6)
    }

    /// The AVX2 build's fused steps (the recurrent product made per chunk of rows beside the
    /// gates) against the product as one GEMM and then the gates, bit for bit: with and without
    /// b_h, forward and pullback, one worker and two. H = 150: chunks of 54 rows (120 rows are
    /// three), a lane tail of 6 and a last panel of 2 columns; steps of 120, 90 and 20 rows (the
    /// unfused product sends fewer than 16 rows to OpenBLAS, whose sums may round otherwise).
    @Test(.enabled(if: GRUKernels.fuses(hidden: 150), "the fused steps run only in the AVX2 build"))
    func gruFusedStepsEqualProductThenGates() {
        let h = 150, counts = [120, 90, 20], offsets = [0, 120, 210, 230], rows = 230
        let wh = ops.m(h, 3 * h, 80), bias = ops.m(1, 3 * h, 81), inputs = ops.m(rows, 3 * h, 82), g = ops.m(rows, h, 83)
        let packed = GRUKernels.packedHidden(wh)
        for hiddenBias in [nil, bias] {
            for compute in [Compute.serial, Compute(workers: 2, blasThreads: 1)] {
                var fused = [inputs, Matrix(rows: rows, columns: h), Matrix(rows: rows, columns: h)], plain = fused
                for (t, n) in counts.enumerated() {
                    let step = GRUKernels.Step(t, offsets, count: n, hidden: h)
                    GRUKernels.fusedForward(step, packed: packed.forward, hiddenBias: hiddenBias, state: &fused, compute: compute)
                    var product = hiddenBias.map { Matrix(repeatingRow: $0, count: n, compute: .serial) } ?? Matrix(rows: n, columns: 3 * h)
                    if t > 0 { BLAS.gemm(plain[2], aRows: offsets[t - 1]..<offsets[t - 1] + n, wh, beta: 1, into: &product, firstRow: 0, compute: compute) }
                    GRUKernels.forward(step, product: product, state: &plain, compute: compute)
                }
                #expect(fused.map(\.values) == plain.map(\.values), "forward, bias \(hiddenBias != nil), \(compute)")
                let reads = [g, fused[1], fused[2]]
                var fusedGrads = [fused[0], Matrix(rows: rows, columns: 3 * h), Matrix(rows: counts[0], columns: h)], plainGrads = fusedGrads
                for (t, n) in counts.enumerated().reversed() {
                    let step = GRUKernels.Step(t, offsets, count: n, hidden: h)
                    GRUKernels.fusedBackward(step, packedTransposed: packed.backward, reads: reads, buffers: &fusedGrads, compute: compute)
                    GRUKernels.backward(step, reads: reads, buffers: &plainGrads, compute: compute)
                    guard t > 0 else { continue }   // step 0's carry is never read: neither path adds to it
                    let dHidden = plainGrads[1]
                    BLAS.gemm(dHidden, aRows: offsets[t]..<offsets[t] + n, wh, transposeB: true, alpha: 1, beta: 1, into: &plainGrads[2],
                              firstRow: 0, compute: compute)
                }
                #expect(fusedGrads.map(\.values) == plainGrads.map(\.values), "pullback, bias \(hiddenBias != nil), \(compute)")
            }
        }
    }

    @Test func softmaxOverSteps() {
        // Three steps of two sequences; the second's last step masked.
        let mask: [Float] = [1, 1, 1, 1, 1, 0]
        ops.check([ops.m(6, 1, 74)]) { t, v in t.softmaxSteps(v[0], steps: 3, mask: mask) }
        ops.check([ops.m(6, 1, 75)]) { t, v in t.softmaxSteps(v[0], steps: 3, mask: nil) }
        let scores = ops.m(6, 1, 76)
        let p = Tape(compute: .serial).softmaxSteps(Variable(scores), steps: 3, mask: mask).value.values
        #expect(p[5] == 0 && abs(p[1] + p[3] - 1) < 1e-6 && abs(p[0] + p[2] + p[4] - 1) < 1e-6)
        #expect(abs(p[1] / p[3] - Foundation.exp(scores.values[1] - scores.values[3])) < 1e-4)
        // Every step masked: uniform, as torch's masked_fill(-1e9) gives.
        let none = Tape(compute: .serial).softmaxSteps(Variable(scores), steps: 3, mask: [Float](repeating: 0, count: 6)).value.values
        #expect(none.allSatisfy { abs($0 - 1 / 3) < 1e-6 })
    }

    @Test func gatedUpdate() {
        ops.check([ops.m(3, 6, 81), ops.m(3, 6, 82), ops.m(3, 2, 83)]) { t, v in t.gatedUpdate(inputs: v[0], hidden: v[1], state: v[2]) }
        // Against SR-GNN's cell written out: z weighs the new state.
        let (gi, gh, h) = (ops.m(3, 6, 84), ops.m(3, 6, 85), ops.m(3, 2, 86))
        let out = Tape(compute: .serial).gatedUpdate(inputs: Variable(gi), hidden: Variable(gh), state: Variable(h)).value
        func sigmoid(_ v: Float) -> Float { 1 / (1 + Foundation.exp(-v)) }
        for i in 0..<3 {
            for j in 0..<2 {
                let r = sigmoid(gi[i, j] + gh[i, j]), z = sigmoid(gi[i, 2 + j] + gh[i, 2 + j])
                let n = Foundation.tanh(gi[i, 4 + j] + r * gh[i, 4 + j])
                #expect(abs(out[i, j] - ((1 - z) * h[i, j] + z * n)) < 1e-6)
            }
        }
    }

    /// Sequences longer than a block of the kernel (~1,024 rows: here 7 × 400 steps, two
    /// sequences a block, the last block short): values and both gradients against the sums
    /// written out, and the same numbers on one worker and on two.
    @Test func causalConvolutionOverManyBlocks() {
        let (n, steps, c, o, shifts) = (7, 400, 3, 2, [3, 0])   // kernel 2, dilation 3
        let (x, w, b, g) = (ops.m(n * steps, c, 93), ops.m(2 * c, o, 94), ops.m(1, o, 95), ops.m(n * steps, o, 96))
        func run(_ compute: Compute) -> [Matrix] {
            let tape = Tape(compute: compute)
            let (xv, wv, bv) = (tape.parameter(x), tape.parameter(w), tape.parameter(b))
            let y = tape.causalConvolution(xv, weight: wv, bias: bv, steps: steps, dilation: 3)
            tape.backward(tape.mean(tape.mul(y, tape.constant(g))))   // gradients g / (rows · o)
            return [y.value, xv.grad!, wv.grad!]
        }
        let serial = run(.serial), parallel = run(Compute(threads: 2))
        #expect(zip(serial, parallel).allSatisfy { $0.values == $1.values })
        var y = [Double](repeating: 0, count: n * steps * o), dx = [Double](repeating: 0, count: n * steps * c)
        var dw = [Double](repeating: 0, count: 2 * c * o)
        for s in 0..<n {
            for t in 0..<steps {
                let row = s * steps + t
                for j in 0..<o { y[row * o + j] = Double(b[0, j]) }
                for (k, shift) in shifts.enumerated() where t >= shift {
                    for i in 0..<c {
                        for j in 0..<o {
                            y[row * o + j] += Double(x[row - shift, i]) * Double(w[k * c + i, j])
                            dw[(k * c + i) * o + j] += Double(g[row, j]) * Double(x[row - shift, i])
                            dx[(row - shift) * c + i] += Double(g[row, j]) * Double(w[k * c + i, j])
                        }
                    }
                }
            }
        }
        for (got, (expected, scale)) in zip(serial, [(y, 1.0), (dx, Double(n * steps * o)), (dw, Double(n * steps * o))]) {
            #expect(zip(got.values, expected).allSatisfy { abs(Double($0) * scale - $1) < 1e-3 * max(1, abs($1)) })
        }
    }

    /// The convolution's products in the register kernel against OpenBLAS's, at NextItNet's
    /// shape (64 channels, kernel 3, dilation 4, 50 steps, 30 sequences: a full and a short
    /// block): output, dx and dW within float rounding.
    @Test func causalConvolutionKernelBuildsAgree() {
        guard KernelSet.available.contains(.avx2) else { return }
        let (sequences, steps, c, shifts) = (30, 50, 64, [8, 4, 0])
        let (x, w, b, g) = (ops.m(sequences * steps, c, 127), ops.m(3 * c, c, 128), ops.m(1, c, 129), ops.m(sequences * steps, c, 130))
        func run(_ kernels: KernelSet) -> [Matrix] {
            let y = ConvolutionKernels.forward(x, weight: w, bias: b, steps: steps, shifts: shifts, compute: Compute(threads: 2), kernels: kernels)
            let d = ConvolutionKernels.backward(g, x: x, weight: w, steps: steps, shifts: shifts, input: true, weight: true, compute: Compute(threads: 2),
                                                kernels: kernels)
            return [y, d.x!, d.weight!]
        }
        for (p, q) in zip(run(.baseline), run(.avx2)) { #expect(zip(p.values, q.values).allSatisfy { abs($0 - $1) <= 1e-4 * max(1, abs($0)) }) }
    }

    /// relu(LN(conv)) as one op against the convolution and the layer norm as two, bit for bit:
    /// values and every gradient, on one worker and two, in this process's kernel build (checked with
    /// `RECBENCH_KERNELS=baseline` too when written), at NextItNet's
    /// width (64 channels, 50 steps, 30 sequences: a full and a short block) and at an odd one
    /// (5 → 3 channels, whose rows end in a partial lane group); with and without the relu.
    @Test func causalConvolutionWithItsLayerNormEqualsTheTwoOps() {
        for (c, o, relu, seed) in [(64, 64, true, UInt64(180)), (5, 3, false, 186)] {
            let (sequences, steps) = (30, 50)
            let inputs = [ops.m(sequences * steps, c, seed), ops.m(3 * c, o, seed + 1), ops.m(1, o, seed + 2), ops.m(1, o, seed + 3),
                          ops.m(1, o, seed + 4), ops.m(sequences * steps, o, seed + 5)]
            func run(_ compute: Compute, fused: Bool) -> [[Float]] {
                let tape = Tape(compute: compute)
                let v = inputs.prefix(5).map { tape.parameter($0) }
                let y = fused ? tape.causalConvolution(v[0], weight: v[1], bias: v[2], steps: steps, dilation: 4, layerNorm: v[3], v[4], eps: 1e-8, relu: relu)
                    : tape.layerNorm(tape.causalConvolution(v[0], weight: v[1], bias: v[2], steps: steps, dilation: 4), scale: v[3], shift: v[4], eps: 1e-8,
                                     relu: relu)
                tape.backward(tape.mean(tape.mul(y, tape.constant(inputs[5]))))
                return [y.value.values] + v.map { $0.grad!.values }
            }
            for compute in [Compute.serial, Compute(threads: 2)] { #expect(run(compute, fused: true) == run(compute, fused: false), "\(c) channels") }
        }
    }

    @Test func causalConvolution() {
        // Two sequences of 5 steps, 2 channels in, 3 out, kernel 3, dilation 2.
        ops.check([ops.m(10, 2, 87), ops.m(6, 3, 88), ops.m(1, 3, 89)]) { t, v in
            t.causalConvolution(v[0], weight: v[1], bias: v[2], steps: 5, dilation: 2)
        }
        // Against the sum written out: tap k reads (2 − k) · 2 steps back, zeros before the start.
        let (x, w, b) = (ops.m(10, 2, 90), ops.m(6, 3, 91), ops.m(1, 3, 92))
        let y = Tape(compute: .serial).causalConvolution(Variable(x), weight: Variable(w), bias: Variable(b), steps: 5, dilation: 2).value
        for s in 0..<2 {
            for t in 0..<5 {
                for o in 0..<3 {
                    var expected = b[0, o]
                    for k in 0..<3 where t - (2 - k) * 2 >= 0 {
                        for c in 0..<2 { expected += x[s * 5 + t - (2 - k) * 2, c] * w[k * 2 + c, o] }
                    }
                    #expect(abs(y[s * 5 + t, o] - expected) < 1e-5, "y[\(s), \(t), \(o)]")
                }
            }
        }
    }

    @Test func pooledMax() {
        // Bags: row 0 holds table rows 0 and 2 (weight ½), row 1 nothing, row 2 table row 1.
        let bags = SparseMatrix(rows: 3, columns: 3, rowIndices: [0, 0, 2], columnIndices: [0, 2, 1], values: [1, 0.5, 1])
        ops.check([ops.m(3, 4, 93)]) { t, v in t.pooledMax(v[0], bags: bags, rows: [0, 2, 0, 1], empty: -5) }
        let table = ops.m(3, 4, 94)
        let y = Tape(compute: .serial).pooledMax(Variable(table), bags: bags, rows: [0, 1, 2], empty: -5).value
        for j in 0..<4 { #expect(y[0, j] == max(table[0, j], 0.5 * table[2, j]) && y[1, j] == -5 && y[2, j] == table[1, j]) }
    }

    @Test func smoothedAttention() {
        // Segments of 2, 0 and 3 rows; β = 0.5 (NAIS's default) and β = 1 (a plain softmax mean).
        let offsets = [0, 2, 2, 5]
        for beta: Float in [0.5, 1] {
            ops.check([ops.m(5, 1, 95), ops.m(5, 1, 96)]) { t, v in t.smoothedAttention(logits: v[0], values: v[1], offsets: offsets, beta: beta) }
        }
        // Against the formula without the shift, with logits large enough that exp would
        // lose precision in float if it were not shifted.
        let l: [Float] = [30, 31, 0.5, -1, 2], v: [Float] = [2, -1, 0.25, 3, 1]
        let y = Tape(compute: .serial).smoothedAttention(logits: Variable(Matrix(rows: 5, columns: 1, values: l)),
                                                          values: Variable(Matrix(rows: 5, columns: 1, values: v)), offsets: offsets, beta: 0.5).value
        for (s, range) in [(0, 0..<2), (2, 2..<5)] {
            let e = range.map { Foundation.exp(Double(l[$0])) }
            let expected = zip(e, range).map { $0 * Double(v[$1]) }.reduce(0, +) / Foundation.pow(e.reduce(0, +), 0.5)
            #expect(abs(Double(y.values[s]) - expected) < 1e-5 * max(1, abs(expected)), "segment \(s)")
        }
        #expect(y.values[1] == 0)
    }

    @Test func reciprocalSqrt() {
        var x = ops.m(3, 4, 97)
        for i in x.values.indices { x.values[i] = 0.3 + x.values[i] * x.values[i] }
        x.values[5] = 0.01   // below the floor: clamped, no gradient (as the numeric one, the floor being flat)
        ops.check([x]) { t, v in t.reciprocalSqrt(v[0], floor: 0.05) }
        let y = Tape(compute: .serial).reciprocalSqrt(Variable(x), floor: 0.05).value
        #expect(abs(y.values[0] - 1 / x.values[0].squareRoot()) < 1e-6 && abs(y.values[5] - 1 / Float(0.05).squareRoot()) < 1e-6)
    }

    /// DGCF's per-factor propagation and edge dots (K = 2 groups of 2 columns) on a small directed
    /// graph with a node of no edges and a repeated pair: gradients, and values against the sums.
    @Test func factorPropagationAndEdgeDots() {
        let edges = EdgeIndex(nodes: 5, heads: [0, 2, 0, 3, 2, 0], tails: [2, 0, 3, 0, 1, 2])
        ops.check([ops.m(5, 4, 150), ops.m(6, 2, 151)]) { t, v in t.factorPropagation(v[0], weights: v[1], over: edges) }
        ops.check([ops.m(5, 4, 152), ops.m(5, 4, 153)]) { t, v in t.edgeFactorDots(v[0], v[1], over: edges, factors: 2) }
        let x = ops.m(5, 4, 154), w = ops.m(6, 2, 155), y = ops.m(5, 4, 156)
        let f = Tape(compute: .serial).factorPropagation(Variable(x), weights: Variable(w), over: edges).value
        let d = Tape(compute: .serial).edgeFactorDots(Variable(x), Variable(y), over: edges, factors: 2).value
        for node in 0..<5 {
            for c in 0..<4 {
                let expected = edges.heads.indices.filter { edges.heads[$0] == node }
                    .reduce(0.0) { $0 + Double(w[$1, c / 2]) * Double(x[Int(edges.tails[$1]), c]) }
                #expect(abs(Double(f[node, c]) - expected) < 1e-5, "node \(node), column \(c)")
            }
        }
        #expect(f.row(4).allSatisfy { $0 == 0 } && f.row(1).allSatisfy { $0 == 0 })   // nodes 1 and 4 head no edge
        for e in 0..<6 {
            for k in 0..<2 {
                let (h, t) = (Int(edges.heads[e]), Int(edges.tails[e]))
                let expected = (2 * k..<2 * k + 2).reduce(0.0) { $0 + Double(x[h, $1]) * Double(y[t, $1]) }
                #expect(abs(Double(d[e, k]) - expected) < 1e-5, "edge \(e), factor \(k)")
            }
        }
    }

    /// The same ops at DGCF's shapes (whole and partial lane groups: 8 and 12 columns a factor, and
    /// one factor), over many chunks of nodes and edges: gradient-checked on a small graph, and on a
    /// large one the same bits on two workers as on one; no edges gives zeros.
    @Test func factorPropagationAtWiderFactorsAndOnTwoWorkers() {
        let small = EdgeIndex(nodes: 4, heads: [0, 1, 3, 1], tails: [1, 0, 1, 3])
        for (width, factors, seed) in [(24, 2, UInt64(160)), (24, 3, 162), (5, 1, 164)] {
            ops.check([ops.m(4, width, seed), ops.m(4, factors, seed + 1)]) { t, v in t.factorPropagation(v[0], weights: v[1], over: small) }
            ops.check([ops.m(4, width, seed), ops.m(4, width, seed + 1)]) { t, v in t.edgeFactorDots(v[0], v[1], over: small, factors: factors) }
        }
        var rng = SeededGenerator(seed: 7)
        let nodes = 300, heads = (0..<5000).map { _ in Int32.random(in: 0..<300, using: &rng) }
        let edges = EdgeIndex(nodes: nodes, heads: heads, tails: heads.map { _ in Int32.random(in: 0..<300, using: &rng) })
        func run(_ compute: Compute) -> [[Float]] {
            let tape = Tape(compute: compute)
            let x = tape.parameter(ops.m(nodes, 64, 170)), w = tape.parameter(ops.m(5000, 4, 171)), y = tape.parameter(ops.m(nodes, 64, 172))
            let f = tape.factorPropagation(x, weights: w, over: edges), d = tape.edgeFactorDots(f, y, over: edges, factors: 4)
            tape.backward(tape.mean(d))
            return [f.value.values, d.value.values, x.grad!.values, w.grad!.values, y.grad!.values]
        }
        #expect(run(Compute(workers: 2, blasThreads: 1)) == run(.serial))
        let none = EdgeIndex(nodes: 3, heads: [], tails: [])
        let zero = Tape(compute: .serial).factorPropagation(Variable(ops.m(3, 8, 173)), weights: Variable(Matrix(rows: 0, columns: 2)), over: none)
        #expect(zero.value.rows == 3 && zero.value.values.allSatisfy { $0 == 0 })
    }

    @Test func distanceCorrelation() {
        ops.check([ops.m(6, 2, 98), ops.m(6, 3, 99)]) { t, v in t.distanceCorrelation(v[0], v[1]) }
        // Against the textbook statistic (Székely et al. 2007) in Double, where the floors are
        // negligible: dCor² = V₁₂ / √(V₁₁ V₂₂), V_ab = Σ A_ij B_ij / n² over double-centred
        // distances. RecBole's dcov₁₂ / √(dcov₁₁ dcov₂₂) with dcov = √V is its square root.
        func centred(_ m: Matrix) -> [Double] {
            let n = m.rows
            let d = (0..<(n * n)).map { k in (0..<m.columns).reduce(0.0) { $0 + pow(Double(m[k / n, $1] - m[k % n, $1]), 2) }.squareRoot() }
            let row = (0..<n).map { i in d[(i * n)..<((i + 1) * n)].reduce(0, +) / Double(n) }, all = row.reduce(0, +) / Double(n)
            return (0..<(n * n)).map { k in d[k] - row[k / n] - row[k % n] + all }
        }
        func v(_ p: [Double], _ q: [Double]) -> Double { zip(p, q).reduce(0) { $0 + $1.0 * $1.1 } }
        let a = ops.m(8, 3, 100), b = ops.m(8, 2, 101)
        let (x, y) = (centred(a), centred(b))
        let textbook = (v(x, y) / (v(x, x) * v(y, y)).squareRoot()).squareRoot()
        let got = Double(Tape(compute: .serial).distanceCorrelation(Variable(a), Variable(b)).value.values[0])
        #expect(abs(got - textbook) < 1e-3, "dCor \(got), textbook \(textbook)")
        let own = Double(Tape(compute: .serial).distanceCorrelation(Variable(a), Variable(a)).value.values[0])
        #expect(abs(own - 1) < 1e-4, "dCor(x, x) = \(own)")
    }

    @Test func repeatExploreNLL() {
        // Two sequences over 3 steps (padding id 5 of classes 0…5): row 0 reads items 1, 3, 1,
        // row 1 reads item 2 then padding. Targets: 1 (a repeat), 4 (new).
        let items: [Int32] = [1, 2, 3, 5, 1, 5], targets: [Int32] = [1, 4]
        let mode = Matrix(rows: 2, columns: 2, values: [0.3, 0.7, 0.6, 0.4])
        let weights = Matrix(rows: 6, columns: 1, values: [0.2, 1, 0.5, 0, 0.3, 0])
        ops.check([mode, weights, ops.m(2, 6, 77)]) { t, v in
            t.repeatExploreNLL(mode: v[0], repeatWeights: v[1], explore: v[2], items: items, padding: 5, targets: targets)
        }
        // Against the formula: row 0's target is in its sequence (explore gives it 0); row 1's
        // explore softmax leaves out item 2 only (the padding class stays in).
        let z = ops.m(2, 6, 78)
        let loss = Tape(compute: .serial).repeatExploreNLL(mode: Variable(mode), repeatWeights: Variable(weights), explore: Variable(z),
                                                           items: items, padding: 5, targets: targets).value.values[0]
        let row1 = [0, 1, 3, 4, 5].map { Foundation.exp(Double(z[1, $0])) }.reduce(0, +)
        let p0 = 0.3 * (0.2 + 0.3), p1 = 0.4 * Foundation.exp(Double(z[1, 4])) / row1
        #expect(abs(Double(loss) + (Foundation.log(p0 + 1e-8) + Foundation.log(p1 + 1e-8)) / 2) < 1e-5)
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

    @Test func selfAttentionOverPackedSequences() {
        // Two sequences of 3 and 2 steps, 4 columns in 2 heads; causal and bidirectional; with
        // dropout factors on the weights (2 · (9 + 4) of them).
        let keep = Matrix(rows: 26, columns: 1, values: (0..<26).map { $0 % 5 == 0 ? 0 : 1.25 })
        for causal in [true, false] {
            for factors in [nil, keep] {
                ops.check([ops.m(5, 4, 55), ops.m(5, 4, 56), ops.m(5, 4, 57)]) { t, v in
                    t.selfAttention(v[0], v[1], v[2], heads: 2, lengths: [3, 2], causal: causal, keep: factors)
                }
                ops.check([ops.m(5, 12, 58)]) { t, v in t.selfAttention(qkv: v[0], heads: 2, lengths: [3, 2], causal: causal, keep: factors) }
                // Side by side, the same values as three separate inputs.
                let qkv = ops.m(5, 12, 59), tape = Tape(compute: .serial)
                let parts = (0..<3).map { c in Variable(Matrix(rows: 5, columns: 4, values: (0..<20).map { qkv[$0 / 4, 4 * c + $0 % 4] })) }
                let fused = tape.selfAttention(qkv: Variable(qkv), heads: 2, lengths: [3, 2], causal: causal, keep: factors)
                let separate = tape.selfAttention(parts[0], parts[1], parts[2], heads: 2, lengths: [3, 2], causal: causal, keep: factors)
                #expect(fused.value.values == separate.value.values)
            }
        }
    }

    /// Only some rows as queries (a sequence with none among them): gradients against central
    /// differences with dropout on the weights (2 heads · (2 + 1) queries of 3 or 2 steps), and
    /// without dropout, the full attention's rows and its gradients when only those rows are read.
    @Test func selfAttentionAtQueryRows() {
        let lengths = [3, 2, 4], queries: [Int32] = [0, 2, 4]
        let keep = Matrix(rows: 2 * (2 * 3 + 1 * 2), columns: 1, values: (0..<16).map { $0 % 5 == 0 ? 0 : 1.25 })
        for causal in [true, false] {
            ops.check([ops.m(9, 12, 63)]) { t, v in t.selfAttention(qkv: v[0], heads: 2, lengths: lengths, causal: causal, keep: keep, queries: queries) }
            let (qkv, r) = (ops.m(9, 12, 64), ops.m(3, 4, 65))
            func run(_ subset: Bool) -> (Matrix, Matrix) {
                let tape = Tape(compute: .serial), x = tape.parameter(qkv)
                let out = subset ? tape.selfAttention(qkv: x, heads: 2, lengths: lengths, causal: causal, keep: nil, queries: queries)
                    : tape.gather(tape.selfAttention(qkv: x, heads: 2, lengths: lengths, causal: causal, keep: nil), rows: queries)
                tape.backward(tape.mean(tape.mul(out, tape.constant(r))))
                return (out.value, x.grad!)
            }
            let (subset, full) = (run(true), run(false))
            #expect(zip(subset.0.values, full.0.values).allSatisfy { abs($0 - $1) <= 1e-6 })
            #expect(zip(subset.1.values, full.1.values).allSatisfy { abs($0 - $1) <= 1e-6 })
            #expect(subset.1.values[(7 * 12)..<(8 * 12)].allSatisfy { $0 == 0 })   // the third sequence: no query, no gradient
        }
    }

    /// 8-wide heads over at most eight steps run in CLanes' short-attention kernel (AutoInt's
    /// shape): gradients against central differences through the tape, and against the general
    /// loops (`baseline`) over many chunks of sequences of 7, 0, 8, 3 and 1 steps, with and
    /// without dropout factors, Q, K and V apart and side by side; the same bits on two workers.
    @Test func shortHeadAttentionAgreesWithTheGeneralLoops() {
        guard KernelSet.available.contains(.avx2) else { return }
        ops.check([ops.m(10, 48, 70)]) { t, v in t.selfAttention(qkv: v[0], heads: 2, lengths: [7, 3], causal: false, keep: nil) }
        let lengths = (0..<300).map { [7, 0, 8, 3, 1][$0 % 5] }, rows = lengths.reduce(0, +)
        let shape = AttentionKernels.Shape(lengths: lengths, heads: 2, width: 16)
        let keep = Matrix(rows: shape.weightCount, columns: 1, values: (0..<shape.weightCount).map { $0 % 7 == 0 ? 0 : 1.25 })
        let (qkv, g) = (ops.m(rows, 48, 71, scale: 2), ops.m(rows, 16, 72))
        func columns(_ m: Matrix, _ r: Range<Int>) -> Matrix {
            Matrix(rows: m.rows, columns: r.count, values: (0..<m.rows * r.count).map { m[$0 / r.count, r.lowerBound + $0 % r.count] })
        }
        let (q, k, v) = (columns(qkv, 0..<16), columns(qkv, 16..<32), columns(qkv, 32..<48))
        for factors in [nil, keep] {
            func run(_ kernels: KernelSet, _ compute: Compute) -> [Matrix] {
                let (out, weights) = AttentionKernels.forward(qkv: qkv, shape: shape, causal: false, keep: factors, compute: compute, kernels: kernels)
                let apart = AttentionKernels.forward(q: q, k: k, v: v, shape: shape, causal: false, keep: factors, compute: compute, kernels: kernels)
                let d = AttentionKernels.backward(g, qkv: qkv, weights: weights, keep: factors, shape: shape, compute: compute, kernels: kernels)
                let dApart = AttentionKernels.backward(g, q: q, k: k, v: v, weights: weights, keep: factors, shape: shape, compute: compute, kernels: kernels)
                #expect(out.values == apart.output.values && weights.values == apart.weights.values)
                #expect(columns(d, 0..<16).values == dApart.q.values && columns(d, 16..<32).values == dApart.k.values
                        && columns(d, 32..<48).values == dApart.v.values)
                return [out, weights, d]
            }
            let short = run(.avx2, .serial)
            #expect(zip(short, run(.avx2, Compute(threads: 2))).allSatisfy { $0.values == $1.values })
            for (p, r) in zip(short, run(.baseline, .serial)) {
                let size = max(1, r.values.map(abs).max() ?? 0)
                #expect(zip(p.values, r.values).allSatisfy { abs($0 - $1) <= 1e-5 * size }, "dropout \(factors != nil)")
            }
        }
        // A causal forward takes the general loops; the short pullback reads its weights as the general one does.
        let causal = AttentionKernels.forward(qkv: qkv, shape: shape, causal: true, keep: nil, compute: .serial, kernels: .avx2)
        #expect(causal.output.values == AttentionKernels.forward(qkv: qkv, shape: shape, causal: true, keep: nil, compute: .serial,
                                                                   kernels: .baseline).output.values)
        let pullbacks = [KernelSet.avx2, .baseline].map {
            AttentionKernels.backward(g, qkv: qkv, weights: causal.weights, keep: nil, shape: shape, compute: .serial, kernels: $0)
        }
        #expect(zip(pullbacks[0].values, pullbacks[1].values).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($1)) })
        // Heads 16 wide, or a sequence of 9 steps: the general loops, the same bits with either kernel set.
        for (lengths, heads) in [([7, 3], 1), ([9, 7], 2)] {
            let s = AttentionKernels.Shape(lengths: lengths, heads: heads, width: 16), x = ops.m(lengths.reduce(0, +), 48, 73)
            let outputs = [KernelSet.avx2, .baseline].map {
                AttentionKernels.forward(qkv: x, shape: s, causal: false, keep: nil, compute: .serial, kernels: $0).output
            }
            #expect(outputs[0].values == outputs[1].values, "\(lengths), \(heads) heads")
        }
    }

    @Test func selfAttentionEqualsTheFormula() {
        // One head, one sequence of 2 steps, causal: step 0 sees itself only.
        let q = ops.m(2, 2, 58), k = ops.m(2, 2, 59), v = ops.m(2, 2, 60)
        let out = Tape(compute: .serial).selfAttention(Variable(q), Variable(k), Variable(v), heads: 1, lengths: [2], causal: true, keep: nil).value
        #expect(abs(out[0, 0] - v[0, 0]) < 1e-6 && abs(out[0, 1] - v[0, 1]) < 1e-6)
        let s = (0..<2).map { j in Double(q[1, 0] * k[j, 0] + q[1, 1] * k[j, 1]) / 2.0.squareRoot() }
        let w = s.map { Foundation.exp($0) }, total = w.reduce(0, +)
        #expect(abs(Double(out[1, 0]) - (w[0] * Double(v[0, 0]) + w[1] * Double(v[1, 0])) / total) < 1e-5)
        // A sequence of 19 steps (two eight-lane groups and a tail), causal and not, every row in Double.
        let (t, width) = (19, 3)
        let (q2, k2, v2) = (ops.m(t, width, 67, scale: 2), ops.m(t, width, 68, scale: 2), ops.m(t, width, 69))
        for causal in [true, false] {
            let o = Tape(compute: .serial).selfAttention(Variable(q2), Variable(k2), Variable(v2), heads: 1, lengths: [t], causal: causal, keep: nil).value
            for i in 0..<t {
                let seen = causal ? i + 1 : t
                let scores = (0..<seen).map { j in (0..<width).reduce(0.0) { $0 + Double(q2[i, $1] * k2[j, $1]) } / Double(width).squareRoot() }
                let top = scores.max()!, e = scores.map { Foundation.exp($0 - top) }, sum = e.reduce(0, +)
                for c in 0..<width {
                    let expected = (0..<seen).reduce(0.0) { $0 + e[$1] * Double(v2[$1, c]) } / sum
                    #expect(abs(Double(o[i, c]) - expected) < 1e-5, "causal \(causal), row \(i), column \(c)")
                }
            }
        }
    }

    @Test func gelu() {
        ops.check([ops.m(3, 11, 61, scale: 3)]) { t, v in t.gelu(v[0]) }
        let x = ops.m(1, 8, 62, scale: 4)
        let y = Tape(compute: .serial).gelu(Variable(x)).value
        for j in 0..<8 {
            let v = Double(x[0, j])
            #expect(abs(Double(y[0, j]) - v * 0.5 * (1 + Foundation.erf(v / 2.0.squareRoot()))) < 1e-6)
        }
    }

    @Test func stepBroadcastsAndSums() {
        ops.check([ops.m(2, 3, 63)]) { t, v in t.broadcastSteps(v[0], steps: 3) }
        ops.check([ops.m(6, 3, 64)]) { t, v in t.sumSteps(v[0], steps: 3) }
        ops.check([ops.m(5, 3, 65)]) { t, v in t.rows(v[0], 1..<4) }
        ops.check([ops.m(3, 4, 66)]) { t, v in t.sigmoid(v[0]) }
    }

    @Test func additiveAttention() {
        // Two sequences, three steps, width 11 (a full and a partial lane group).
        checkFused(checked: [ops.m(6, 11, 82), ops.m(2, 11, 83), ops.m(11, 1, 84)],
                   compared: [ops.m(6, 11, 85), ops.m(2, 11, 86), ops.m(11, 1, 97)], weights: ops.m(6, 1, 98)) { t, v, mask, fused in
            fused ? t.additiveAttention(keys: v[0], query: v[1], v: v[2], mask: mask, steps: 3)
                : t.softmaxSteps(t.matmul(t.tanh(t.add(v[0], t.broadcastSteps(v[1], steps: 3))), v[2]), steps: 3, mask: mask)
        }
    }

    /// For no mask, a partial mask and one sequence with every step masked (two sequences of three
    /// steps): the fused op's gradients at `checked` against central differences, and the op against
    /// the chain of ops it replaces (`fused` false) at `compared`, values and gradients.
    func checkFused(checked: [Matrix], compared: [Matrix], weights: Matrix, _ build: (Tape, [Variable], [Float]?, Bool) -> Variable) {
        for mask in [nil, [Float]([1, 1, 1, 0, 1, 0]), [1, 0, 1, 0, 0, 0]] {
            ops.check(checked) { t, v in build(t, v, mask, true) }
            expectSameAsChain(inputs: compared, weights: weights) { t, v, fused in build(t, v, mask, fused) }
        }
    }

    /// The fused attention ops over many sequences (300, so several chunks of the kernels and their
    /// per-chunk sums): the same numbers on one worker and on two, and the same as the chains they replace.
    @Test func fusedAttentionsOverManyChunks() {
        let (b, steps, h) = (300, 5, 12)
        let mask = (0..<(b * steps)).map { Float(($0 * 7) % 5 == 0 ? 0 : 1) }
        let (k, q, v, x) = (ops.m(b * steps, h, 99), ops.m(b, h, 100), ops.m(h, 1, 101), ops.m(b * steps, 3, 102))
        func run(_ compute: Compute, additive: Bool) -> [Matrix] {
            let tape = Tape(compute: compute)
            let inputs = (additive ? [k, q, v] : [x, k, q]).map { tape.parameter($0) }
            let out = additive ? tape.additiveAttention(keys: inputs[0], query: inputs[1], v: inputs[2], mask: mask, steps: steps)
                : tape.dotAttentionPool(keys: inputs[0], scored: inputs[1], query: inputs[2], mask: mask, steps: steps)
            tape.backward(tape.mean(tape.mul(out, tape.constant(ops.m(out.value.rows, out.value.columns, 103)))))
            return [out.value] + inputs.map { $0.grad! }
        }
        for additive in [true, false] {
            #expect(zip(run(.serial, additive: additive), run(Compute(threads: 2), additive: additive)).allSatisfy { $0.values == $1.values })
        }
        expectSameAsChain(inputs: [k, q, v], weights: ops.m(b * steps, 1, 104)) { t, i, fused in
            fused ? t.additiveAttention(keys: i[0], query: i[1], v: i[2], mask: mask, steps: steps)
                : t.softmaxSteps(t.matmul(t.tanh(t.add(i[0], t.broadcastSteps(i[1], steps: steps))), i[2]), steps: steps, mask: mask)
        }
    }

    /// Keys dropped out as the additive attention reads them (RepeatNet) against `dropout` then the
    /// attention: the same bits, weights and every gradient, on one worker and on two, for a width
    /// whose row chunks end inside the mask's 32,768-entry chunks (12) and one whose do not (64).
    @Test func additiveAttentionDropsKeysAsDropoutDoes() {
        for h in [12, 64] {
            // 52,900 rows: several forward row chunks at either width (10,922 rows at 12, 2,048 at 64), two
            // backward blocks of sequences at width 64, chunk boundaries inside rows at width 12, and 23 steps:
            // three backward step groups, the last partial.
            let (b, steps) = (2_300, 23)
            let mask = (0..<(b * steps)).map { Float(($0 * 7) % 5 == 0 ? 0 : 1) }
            let (k, q, v, g) = (ops.m(b * steps, h, 115), ops.m(b, h, 116), ops.m(h, 1, 117), ops.m(b * steps, 1, 118))
            func run(_ compute: Compute, fused: Bool) -> [Matrix] {
                let tape = Tape(compute: compute)
                let inputs = [k, q, v].map { tape.parameter($0) }
                let out = fused
                    ? tape.additiveAttention(keys: inputs[0], query: inputs[1], v: inputs[2], mask: mask, steps: steps,
                                             keysDropout: DropoutMask(rate: 0.4, seed: 77))
                    : tape.additiveAttention(keys: tape.dropout(inputs[0], rate: 0.4, seed: 77), query: inputs[1], v: inputs[2], mask: mask, steps: steps)
                tape.backward(tape.mean(tape.mul(out, tape.constant(g))))
                return [out.value] + inputs.map { $0.grad! }
            }
            let reference = run(.serial, fused: false)
            let zeros = reference[1].values.count { $0 == 0 }, maskedEntries = mask.count { $0 == 0 } * h
            #expect(zeros > maskedEntries + reference[1].values.count / 5 && zeros < reference[1].values.count, "some kept keys dropped, not all")
            for compute in [Compute.serial, Compute(threads: 2)] {
                for (index, (x, y)) in zip(reference, run(compute, fused: true)).enumerated() {
                    let differing = zip(x.values, y.values).count { $0 != $1 }
                    #expect(differing == 0, "width \(h), \(compute), matrix \(index): \(differing) entries differ")
                }
            }
        }
    }

    /// The GRU with products large enough to be split over two workers (its step GEMMs read h_{t−1}
    /// in place): the same numbers as on one worker, to float rounding.
    @Test func gruSplitOverWorkers() {
        let (n, d, hidden) = (512, 64, 64)   // a step's product 512 × 64 · 64 × 192: above the split threshold
        let counts = [n, n, n / 2, n / 4]
        let rows = counts.reduce(0, +)
        func run(_ compute: Compute) -> [Matrix] {
            let tape = Tape(compute: compute)
            let (x, wi, wh) = (tape.parameter(ops.m(rows, d, 105)), tape.parameter(ops.m(d, 3 * hidden, 106, scale: 0.2)),
                               tape.parameter(ops.m(hidden, 3 * hidden, 107, scale: 0.2)))
            let out = tape.gru(x, wInput: wi, wHidden: wh, stepCounts: counts)
            tape.backward(tape.mean(tape.mul(out, tape.constant(ops.m(rows, hidden, 108)))))
            return [out.value, x.grad!, wi.grad!, wh.grad!]
        }
        for (a, b) in zip(run(.serial), run(Compute(workers: 2, blasThreads: 1))) {
            #expect(zip(a.values, b.values).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($1)) })
        }
    }

    /// A fused op (`fused` true) and the chain of ops it replaces give the same values and gradients.
    func expectSameAsChain(inputs: [Matrix], weights: Matrix, _ build: (Tape, [Variable], Bool) -> Variable) {
        func run(_ fused: Bool) -> [Matrix] {
            let tape = Tape(compute: .serial)
            let variables = inputs.map { tape.parameter($0) }
            tape.backward(tape.mean(tape.mul(build(tape, variables, fused), tape.constant(weights))))
            return [build(Tape(compute: .serial), inputs.map { Variable($0) }, fused).value]
                + zip(variables, inputs).map { $0.grad ?? Matrix(rows: $1.rows, columns: $1.columns) }
        }
        for (a, b) in zip(run(true), run(false)) { #expect(zip(a.values, b.values).allSatisfy { abs($0 - $1) < 1e-5 }) }
    }

    @Test func dotAttentionPool() {
        // Keys 3 wide, scored rows and queries 11 wide (a full and a partial lane group).
        checkFused(checked: [ops.m(6, 3, 75), ops.m(6, 11, 76), ops.m(2, 11, 77)],
                   compared: [ops.m(6, 3, 78), ops.m(6, 11, 79), ops.m(2, 11, 80)], weights: ops.m(2, 3, 81)) { t, v, mask, fused in
            fused ? t.dotAttentionPool(keys: v[0], scored: v[1], query: v[2], mask: mask, steps: 3)
                : t.sumSteps(t.scaleRows(v[0], by: t.softmaxSteps(t.rowDot(v[1], t.broadcastSteps(v[2], steps: 3)), steps: 3, mask: mask)), steps: 3)
        }
    }

    /// NAIS's fused attention network (AVX2) against its formula in Double: a_j = w · relu((t ⊙ p_j) W + b)
    /// and s_j = t · p_j, for histories of 1 to 13 rows (every remainder of its six-row blocks) and widths
    /// that fill no lane group (d = 13, hidden = 20: a padded second panel).
    @Test func productAttentionIsItsFormula() throws {
        guard KernelSet.available.contains(.avx2) else { return }
        let (d, hidden) = (13, 20)
        let (weight, bias, output, targets) = (ops.m(d, hidden, 131), ops.m(1, hidden, 132), ops.m(1, hidden, 133), ops.m(3, d, 134))
        let fused = try #require(ProductAttention(weight: weight, bias: bias.values, output: output.values, kernels: .avx2))
        for n in 1...13 {
            let history = ops.m(n, d, 135 + UInt64(n))
            var seen = 0
            fused.forEachTarget(0..<3, of: targets, history: history) { r, a, s in
                seen += 1
                for j in 0..<n {
                    var logit = 0.0, similarity = 0.0
                    for c in 0..<hidden {
                        var x = Double(bias.values[c])
                        for k in 0..<d { x += Double(targets[r, k]) * Double(history[j, k]) * Double(weight[k, c]) }
                        logit += max(0, x) * Double(output.values[c])
                    }
                    for k in 0..<d { similarity += Double(targets[r, k]) * Double(history[j, k]) }
                    #expect(abs(Double(a[j]) - logit) <= 1e-5 * max(1, abs(logit)) && abs(Double(s[j]) - similarity) <= 1e-5 * max(1, abs(similarity)),
                            "n \(n), target \(r), row \(j): \(a[j]) / \(logit), \(s[j]) / \(similarity)")
                }
            }
            #expect(seen == 3)
        }
        #expect(ProductAttention(weight: weight, bias: bias.values, output: output.values, kernels: .baseline) == nil)
    }

    /// The additive attention's AVX2+FMA build against the baseline one: weights and every gradient
    /// within float rounding, over 300 sequences of 5 steps, 12 wide (a partial lane group), masked.
    @Test func additiveAttentionKernelBuildsAgree() {
        guard KernelSet.available.contains(.avx2) else { return }
        let (b, steps, h) = (300, 5, 12)
        let mask = (0..<(b * steps)).map { Float(($0 * 7) % 5 == 0 ? 0 : 1) }
        let (k, q, v, g) = (ops.m(b * steps, h, 111), ops.m(b, h, 112), ops.m(h, 1, 113), ops.m(b * steps, 1, 114))
        func run(_ kernels: KernelSet) -> [Matrix] {
            let alpha = AdditiveAttentionKernels.forward(keys: k, query: q, v: v, mask: mask, steps: steps, compute: .serial, kernels: kernels)
            let d = AdditiveAttentionKernels.backward(g, alpha: alpha, keys: k, query: q, v: v, mask: mask, steps: steps, compute: .serial,
                                                      kernels: kernels)
            return [alpha, d.keys, d.query, d.v]
        }
        for (x, y) in zip(run(.baseline), run(.avx2)) { #expect(zip(x.values, y.values).allSatisfy { abs($0 - $1) < 1e-5 }) }
    }

    /// NARM's and STAMP's attention pooling, AVX2+FMA build against the baseline one: output and
    /// every gradient within float rounding, 300 sequences of 5 steps (several chunks), keys 13
    /// and projections 12 wide (partial lane groups), with and without a mask; a NaN projection
    /// reaches the output in both builds.
    @Test func attentionPoolKernelBuildsAgree() {
        guard KernelSet.available.contains(.avx2) else { return }
        let (b, steps) = (300, 5)
        let (k, pr, q, v, g) = (ops.m(b * steps, 13, 122), ops.m(b * steps, 12, 123), ops.m(b, 12, 124), ops.m(12, 1, 125), ops.m(b, 13, 126))
        // Masked steps vary along each sequence (row t·b + i), as padding does.
        for mask in [nil, (0..<(b * steps)).map { Float(($0 / b + $0 % b) % 3 == 0 ? 0 : 1) }] {
            func run(_ kernels: KernelSet) -> [Matrix] {
                let out = AttentionPoolKernels.forward(keys: k, projected: pr, query: q, v: v, mask: mask, steps: steps, compute: Compute(threads: 2),
                                                       kernels: kernels)
                let d = AttentionPoolKernels.backward(g, keys: k, projected: pr, query: q, v: v, mask: mask, steps: steps, compute: Compute(threads: 2),
                                                      kernels: kernels)
                return [out, d.keys, d.projected, d.query, d.v]
            }
            for (index, (x, y)) in zip(run(.baseline), run(.avx2)).enumerated() {
                // dv sums 1,500 rows' terms in another order: rounding reaches ~1e-5 of it.
                let worst = zip(x.values, y.values).map { abs($0 - $1) / max(1, abs($0)) }.max() ?? 0
                #expect(worst <= 5e-5, "mask \(mask != nil), matrix \(index): \(worst)")
            }
        }
        var broken = pr
        broken.values[3 * b * 12 + 5 * 12 + 2] = .nan   // sequence 5, step 3
        for kernels in [KernelSet.baseline, .avx2] {
            let out = AttentionPoolKernels.forward(keys: k, projected: broken, query: q, v: v, mask: nil, steps: steps, compute: .serial, kernels: kernels)
            #expect(out[5, 0].isNaN && !out[4, 0].isNaN, "\(kernels)")
        }
    }

    /// The GRU step's AVX2+FMA build against the baseline one, forward and pullback, over two
    /// packed steps of 300 and 170 rows (several chunks), H = 12 (a partial lane group).
    @Test func gruKernelBuildsAgree() {
        guard KernelSet.available.contains(.avx2) else { return }
        let (h, counts) = (12, [300, 170]), rows = 470, offsets = [0, 300, 470]
        func run(_ kernels: KernelSet) -> [Matrix] {
            var state = [ops.m(rows, 3 * h, 115), Matrix(rows: rows, columns: h), Matrix(rows: rows, columns: h)]
            for (t, n) in counts.enumerated() {
                GRUKernels.forward(GRUKernels.Step(t, offsets, count: n, hidden: h), product: ops.m(300, 3 * h, 116 + UInt64(t)), state: &state,
                                   compute: Compute(threads: 2), kernels: kernels)
            }
            var buffers = [state[0], Matrix(rows: rows, columns: 3 * h), ops.m(300, h, 118)]
            for (t, n) in counts.enumerated().reversed() {
                GRUKernels.backward(GRUKernels.Step(t, offsets, count: n, hidden: h), reads: [ops.m(rows, h, 119), state[1], state[2]],
                                    buffers: &buffers, compute: Compute(threads: 2), kernels: kernels)
            }
            return state + buffers
        }
        for (x, y) in zip(run(.baseline), run(.avx2)) { #expect(zip(x.values, y.values).allSatisfy { abs($0 - $1) < 1e-5 }) }
    }

    @Test func weightedSumSteps() {
        // Two sequences, three steps, values 11 wide (a full and a partial lane group), one weight zero.
        var weights = ops.m(6, 1, 104)
        weights.values[4] = 0
        ops.check([ops.m(6, 11, 105), weights]) { t, v in t.weightedSumSteps(v[0], weights: v[1], steps: 3) }
        expectSameAsChain(inputs: [ops.m(6, 11, 106), weights], weights: ops.m(2, 11, 107)) { t, v, fused in
            fused ? t.weightedSumSteps(v[0], weights: v[1], steps: 3) : t.sumSteps(t.scaleRows(v[0], by: v[1]), steps: 3)
        }
        // Over several chunks of sequences, one worker and two give the same numbers.
        let (values, alpha, g) = (ops.m(300 * 4, 5, 108), ops.m(300 * 4, 1, 109), ops.m(300, 5, 110))
        func run(_ compute: Compute) -> [Matrix] {
            let out = WeightedStepSumKernels.forward(values: values, weights: alpha, steps: 4, compute: compute)
            let grads = WeightedStepSumKernels.backward(g, values: values, weights: alpha, steps: 4, compute: compute)
            return [out, grads.values, grads.weights]
        }
        #expect(zip(run(.serial), run(Compute(threads: 2))).allSatisfy { $0.values == $1.values })
    }

    @Test func attentionPool() {
        // Two sequences, three steps; keys 3 wide, projections and query 11 wide (a full and a
        // partial lane group); with and without a mask.
        for mask in [nil, [Float]([1, 1, 1, 0, 1, 0])] {
            ops.check([ops.m(6, 3, 67), ops.m(6, 11, 68), ops.m(2, 11, 69), ops.m(11, 1, 70)]) { t, v in
                t.attentionPool(keys: v[0], projected: v[1], query: v[2], v: v[3], mask: mask, steps: 3)
            }
        }
        // Against the formula, with the broadcast ops it replaces.
        let k = ops.m(6, 3, 71), pr = ops.m(6, 4, 72), q = ops.m(2, 4, 73), w = ops.m(4, 1, 74)
        let tape = Tape(compute: .serial)
        let fused = tape.attentionPool(keys: Variable(k), projected: Variable(pr), query: Variable(q), v: Variable(w), mask: nil, steps: 3).value
        let alpha = tape.matmul(tape.sigmoid(tape.add(Variable(pr), tape.broadcastSteps(Variable(q), steps: 3))), Variable(w))
        let plain = tape.sumSteps(tape.scaleRows(Variable(k), by: alpha), steps: 3).value
        #expect(zip(fused.values, plain.values).allSatisfy { abs($0 - $1) < 1e-5 })
    }
}
