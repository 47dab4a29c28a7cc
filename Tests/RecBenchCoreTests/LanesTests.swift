import Foundation
import Testing
import RecBenchCore
import Linalg

/// The vector maths of the elementwise kernels against libm in Double.
struct LanesTests {
    /// ulp distance of `value` from the Double reference rounded to Float.
    func ulps(_ value: Float, _ reference: Double) -> Float {
        let r = Float(reference)
        if r == value { return 0 }
        return abs(value - r) / r.ulp
    }

    /// Every 8th float bit pattern between −87.3 and 88.7 is a lot; a dense sweep of 200k
    /// points plus the points around each power-of-two boundary of n = x·log2(e).
    func exponentSamples() -> [Float] {
        var xs: [Float] = []
        for i in 0..<200_000 { xs.append(-87.3 + Float(i) * (88.7 + 87.3) / 200_000) }
        for n in -125...127 {
            let boundary = (Double(n) + 0.5) * log(2.0)
            xs += [Float(boundary).nextDown, Float(boundary), Float(boundary).nextUp]
        }
        xs += [0, -0.0, 1e-30, -1e-30, 1, -1, 88.72, -87.33]
        return xs
    }

    @Test func expIsWithinTwoUlpOfLibm() {
        var worst: Float = 0, worstAt: Float = 0
        let xs = exponentSamples()
        for chunk in stride(from: 0, to: xs.count, by: 8) {
            var v = Lanes()
            for l in 0..<8 { v[l] = xs[min(chunk + l, xs.count - 1)] }
            let e = Lanes.exp(v)
            for l in 0..<8 {
                let d = ulps(e[l], Foundation.exp(Double(v[l])))
                if d > worst { worst = d; worstAt = v[l] }
            }
        }
        #expect(worst <= 2, "worst error \(worst) ulp at x = \(worstAt)")
    }

    @Test func reluAndItsGradient() {
        let x = Lanes(-2, -0.0, 0, 1e-30, 3, -1e-30, .infinity, -.infinity)
        #expect(Lanes.relu(x) == Lanes(0, 0, 0, 1e-30, 3, 0, .infinity, 0))
        let g = Lanes(1, 2, 3, 4, 5, 6, 7, 8)
        #expect(Lanes.reluGradient(g, output: Lanes.relu(x)) == Lanes(0, 0, 0, 4, 5, 0, 7, 0))
    }

    @Test func expEdgeCases() {
        let x = Lanes(-.infinity, -1000, -87.5, 88.8, .infinity, .nan, 88.72, -87.3)
        let e = Lanes.exp(x)
        #expect(e[0] == 0 && e[1] == 0 && e[2] == 0, "underflow gives 0")
        #expect(e[3] == .infinity && e[4] == .infinity, "overflow gives +inf")
        #expect(e[5].isNaN, "NaN stays NaN")
        #expect(e[6].isFinite && ulps(e[6], Foundation.exp(Double(x[6]))) <= 2, "largest finite results (n = 128) are right: \(e[6])")
        #expect(e[7] > 0 && ulps(e[7], Foundation.exp(Double(x[7]))) <= 2, "smallest normal results are right: \(e[7])")
    }

    @Test func expNonPositiveEqualsExpWherePromised() {
        var xs = exponentSamples().filter { $0 <= 0 }
        xs += [-.infinity, -1000, -87.5, -87.336_544, -.nan, .nan]
        for chunk in stride(from: 0, to: xs.count, by: 8) {
            var v = Lanes()
            for l in 0..<8 { v[l] = xs[min(chunk + l, xs.count - 1)] }
            let lean = Lanes.expNonPositive(v), full = Lanes.exp(v)
            for l in 0..<8 {
                #expect(lean[l] == full[l] || (lean[l].isNaN && full[l].isNaN), "x = \(v[l]): \(lean[l]) vs \(full[l])")
            }
        }
    }

    /// The tanh kernel in every build this CPU runs: libm's values over −20…20, NaN and
    /// saturation kept, and a length that leaves a partial last vector.
    @Test(arguments: KernelSet.available)
    func tanhKernelMatchesLibm(kernels: KernelSet) {
        matchesLibm(kernels, "tanh", { ActivationKernels.tanh($0, compute: Compute(threads: 2), kernels: $1) }, Foundation.tanh, saturated: (1, -1))
    }

    /// σ and its pullback in every build this CPU runs, as tanh above.
    @Test(arguments: KernelSet.available)
    func sigmoidKernelMatchesLibm(kernels: KernelSet) {
        let y = matchesLibm(kernels, "sigmoid", { ActivationKernels.sigmoid($0, compute: Compute(threads: 2), kernels: $1) },
                            { 1 / (1 + Foundation.exp(-$0)) }, saturated: (1, 0))
        var g = Matrix(rows: 1, columns: y.columns)
        for i in 0..<g.columns { g.values[i] = Float(i % 7) - 3 }
        let d = ActivationKernels.sigmoidGradient(g, output: y, compute: Compute(threads: 2), kernels: kernels)
        for i in [8, 1_000, 160_001, y.columns - 1] { #expect(abs(d.values[i] - g.values[i] * y.values[i] * (1 - y.values[i])) < 1e-7) }
    }

    /// `kernel` over −20…20 in 320,003 steps (NaN, 1e30 and −1e30 at 5–7) within 3·10⁻⁷ of
    /// `reference`, NaN kept and ±1e30 giving `saturated`; returns the kernel's output.
    @discardableResult
    func matchesLibm(_ kernels: KernelSet, _ name: String, _ kernel: (Matrix, KernelSet) -> Matrix, _ reference: (Double) -> Double,
                     saturated: (Float, Float)) -> Matrix {
        let count = 320_003
        var x = Matrix(rows: 1, columns: count)
        for i in 0..<count { x.values[i] = -20 + Float(i) * 40 / Float(count) }
        x.values[5] = .nan; x.values[6] = 1e30; x.values[7] = -1e30
        let y = kernel(x, kernels)
        var worst = 0.0
        for i in 8..<count { worst = max(worst, abs(Double(y.values[i]) - reference(Double(x.values[i])))) }
        #expect(worst < 3e-7, "\(kernels): \(name) worst absolute error \(worst)")
        #expect(y.values[5].isNaN && y.values[6] == saturated.0 && y.values[7] == saturated.1)
        return y
    }

    /// Pooled lookups and their pullback in every build against the sums written out, at the
    /// widths the AVX2 kernels treat apart (1: scalars; 3, 8, 10, 16: one or two registers; 17
    /// and 64: the general path), summed and side by side; bags weighted, one empty, rows
    /// repeating (one table row hit by consecutive rows, as a two-valued field does).
    @Test(arguments: KernelSet.available)
    func pooledLookupsMatchTheirSums(kernels: KernelSet) {
        let a = SparseMatrix(rows: 3, columns: 9, rowIndices: [0, 0, 2], columnIndices: [1, 3, 8], values: [0.5, 0.5, 2])
        let b = SparseMatrix(rows: 2, columns: 9, rowIndices: [0, 1, 1, 1], columnIndices: [0, 1, 4, 5], values: [1, -1, 0.25, 3])
        let lookups: [PooledLookup] = [(a, (0..<300).map { Int32($0 % 7 == 0 ? 1 : 2) }), (b, (0..<300).map { Int32($0 % 2) })]
        func bag(_ l: PooledLookup, _ r: Int) -> [(Int, Float)] {
            l.bags.entries(ofRow: Int(l.rows[r])).map { (Int(l.bags.columnIndices[$0]), l.bags.values[$0]) }
        }
        for d in [1, 3, 8, 10, 16, 17, 64] {
            var draws = SeededGenerator(seed: UInt64(d))
            let table = Matrix(rows: 9, columns: d, values: (0..<9 * d).map { _ in draws.nextUnitFloat() - 0.5 })
            for sideBySide in [false, true] {
                let width = sideBySide ? 2 * d : d
                let g = Matrix(rows: 300, columns: width, values: (0..<300 * width).map { _ in draws.nextUnitFloat() - 0.5 })
                let out = PoolingKernels.pooled(lookups, by: table, sideBySide: sideBySide, compute: Compute(threads: 2), kernels: kernels)
                var grad = Matrix(rows: 9, columns: d, repeating: 0.5)
                PoolingKernels.addPooledGradient(g, lookups, sideBySide: sideBySide, into: &grad, kernels: kernels)
                var expected = Matrix(rows: 300, columns: width), expectedGrad = Matrix(rows: 9, columns: d, repeating: 0.5)
                for (f, l) in lookups.enumerated() {
                    for r in 0..<300 {
                        for (c, w) in bag(l, r) {
                            for j in 0..<d {
                                expected[r, (sideBySide ? f * d : 0) + j] += w * table[c, j]
                                expectedGrad[c, j] += w * g[r, (sideBySide ? f * d : 0) + j]
                            }
                        }
                    }
                }
                #expect(out.rows == 300 && out.columns == width)
                #expect(zip(out.values, expected.values).allSatisfy { abs($0 - $1) < 1e-5 }, "\(kernels), d \(d), side by side \(sideBySide)")
                #expect(zip(grad.values, expectedGrad.values).allSatisfy { abs($0 - $1) < 1e-4 }, "\(kernels), d \(d), gradient")
            }
        }
    }

    /// Dropout masks in every build this CPU runs against their definition written out with
    /// SeededGenerator: chunk c of 32,768 entries is stream c of the seed, two 24-bit
    /// uniforms per draw. Sizes: under a chunk, odd, two chunks and three less one (the AVX2
    /// build's partial lane groups), exactly four chunks, nine and a part.
    @Test(arguments: KernelSet.available)
    func dropoutMaskFollowsItsStreams(kernels: KernelSet) {
        let rate: Float = 0.3, keep = 1 / (1 - rate), threshold = UInt64((Double(rate) * 16_777_216).rounded(.up))
        for count in [1, 1_001, 2 * 32_768, 3 * 32_768 - 1, 4 * 32_768, 9 * 32_768 + 777] {
            let mask = Matrix.dropoutMask(rows: 1, columns: count, rate: rate, seed: 42, compute: Compute(threads: 2), kernels: kernels)
            var expected = [Float](repeating: -1, count: count)
            for start in stride(from: 0, to: count, by: 32_768) {
                var draws = SeededGenerator(seed: 42, stream: UInt64(start / 32_768))
                for i in stride(from: start, to: min(count, start + 32_768), by: 2) {
                    let bits = draws.next()
                    expected[i] = bits >> 40 < threshold ? 0 : keep
                    if i + 1 < min(count, start + 32_768) { expected[i + 1] = (bits >> 16) & 0xFF_FFFF < threshold ? 0 : keep }
                }
            }
            #expect(mask.values == expected, "\(kernels), \(count) entries")
            let dropped = Double(mask.values.filter { $0 == 0 }.count) / Double(count)
            #expect(count < 100_000 || abs(dropped - 0.3) < 0.01, "\(kernels): dropped share \(dropped)")
        }
    }

    /// The GELU kernel and its pullback in every build this CPU runs, against Double's erf
    /// over −12…12 (both tails saturate: 0 and x), with a partial last vector.
    @Test(arguments: KernelSet.available)
    func geluKernelMatchesErf(kernels: KernelSet) {
        let count = 240_005
        var x = Matrix(rows: 1, columns: count), g = Matrix(rows: 1, columns: count)
        for i in 0..<count { x.values[i] = -12 + Float(i) * 24 / Float(count); g.values[i] = 0.5 + Float(i % 7) * 0.25 }
        let y = ActivationKernels.gelu(x, compute: Compute(threads: 2), kernels: kernels)
        let dx = ActivationKernels.gelu(x, gradient: g, compute: Compute(threads: 2), kernels: kernels)
        var worst = (value: 0.0, slope: 0.0)
        for i in 0..<count {
            let v = Double(x.values[i]), cdf = 0.5 * (1 + Foundation.erf(v / 2.0.squareRoot()))
            let slope = cdf + v * Foundation.exp(-v * v / 2) / (2 * Double.pi).squareRoot()
            worst.value = max(worst.value, abs(Double(y.values[i]) - v * cdf) / max(1, abs(v)))
            worst.slope = max(worst.slope, abs(Double(dx.values[i]) - Double(g.values[i]) * slope))
        }
        #expect(worst.value < 1e-6 && worst.slope < 2e-6, "\(kernels): worst \(worst)")
    }

    /// A row's softmax numerators in every build this CPU runs, against Double's exp of the same
    /// Float argument: rows of
    /// 1…1,683 entries (partial last vectors), with −∞ entries (a masked class) and entries more
    /// than 87.3 below the maximum, both exactly 0; the maximum returned as it is.
    @Test(arguments: KernelSet.available)
    func softmaxExponentialsMatchExp(kernels: KernelSet) {
        var rng = SeededGenerator(seed: 7)
        for n in [1, 7, 8, 9, 64, 1_683] {
            var row = (0..<n).map { _ in Float(rng.nextUnitFloat()) * 40 - 20 }
            if n > 2 { row[1] = -.infinity; row[n - 1] = row.max()! - 100 }
            var out = [Float](repeating: .nan, count: n)
            let (peak, sum) = row.withUnsafeBufferPointer { r in
                out.withUnsafeMutableBufferPointer { SoftmaxKernels.exponentials(r.baseAddress!, into: $0.baseAddress!, count: n, kernels: kernels) }
            }
            #expect(peak == row.max()!, "\(kernels), \(n): maximum")
            let expected = row.map { Foundation.exp(Double($0 - peak)) }   // the argument as Float rounds it
            let worst = zip(out, expected).map { abs(Double($0) - $1) / max($1, 1e-30) }.max()!
            #expect(worst < 1e-6, "\(kernels), \(n): worst relative error \(worst)")
            #expect(abs(Double(sum) - expected.reduce(0, +)) < 1e-5 * expected.reduce(0, +), "\(kernels), \(n): sum")
            if n > 2 { #expect(out[1] == 0 && out[n - 1] == 0, "\(kernels), \(n): masked and underflowing entries") }
        }
    }

    /// Lanes.log against libm in ulps of the result: densely over 1…16 (where a log-sum-exp's
    /// sums lie), then two mantissas at every normal exponent; +∞ and NaN kept.
    @Test func logMatchesLibm() {
        var xs: [Float] = (0..<200_000).map { 1 + Float($0) * 15 / 200_000 }
        xs += (-126...127).flatMap { e in [Float(sign: .plus, exponent: e, significand: 1), Float(sign: .plus, exponent: e, significand: 1.7)] }
        var worst = 0.0, worstAt: Float = 0
        for chunk in stride(from: 0, to: xs.count, by: 8) {
            var v = Lanes(repeating: 2)
            for l in 0..<min(8, xs.count - chunk) { v[l] = xs[chunk + l] }
            let y = Lanes.log(v)
            for l in 0..<8 {
                let exact = Foundation.log(Double(v[l]))
                let error = exact == 0 ? abs(Double(y[l])) : abs(Double(y[l]) - exact) / Double(Float(exact).ulp)
                if error > worst { worst = error; worstAt = v[l] }
            }
        }
        #expect(worst <= 2, "log worst error \(worst) ulp at x = \(worstAt)")
        let special = Lanes.log(Lanes(.infinity, .nan, 1, 2, 0.5, 10, 1e-30, 1e30))
        #expect(special[0] == .infinity && special[1].isNaN && special[2] == 0)
        #expect(abs(special[3] - 0.693_147_2) < 1e-7 && abs(special[4] + 0.693_147_2) < 1e-7)
    }

    /// The log-sum-exp kernel in every build this CPU runs against a Double reference: the
    /// value and each term's share over ten terms, a partial last vector, a −∞ term, and NaN
    /// in a term giving NaN.
    @Test(arguments: KernelSet.available)
    func logSumExpKernelMatchesDouble(kernels: KernelSet) {
        let count = 70_003, k = 10
        var rng = SeededGenerator(seed: 21)
        var terms = (0..<k).map { _ in Matrix(rows: 1, columns: count, values: (0..<count).map { _ in (rng.nextUnitFloat() * 2 - 1) * 12 }) }
        terms[3].values[11] = -.infinity
        terms[4].values[12] = .nan
        let (value, shares) = GaussianKernels.logSumExp(terms, weights: true, compute: Compute(threads: 2), kernels: kernels)
        let (alone, none) = GaussianKernels.logSumExp(terms, weights: false, compute: Compute(threads: 2), kernels: kernels)
        var worstValue = 0.0, worstShare = 0.0
        for i in 0..<count where i != 12 {
            let ts = terms.map { Double($0.values[i]) }, top = ts.max()!
            let exact = top + Foundation.log(ts.reduce(0) { $0 + Foundation.exp($1 - top) })
            // The float sum of exponentials (≥ 1) is good to a few ulp of 1, which log passes
            // on as an absolute error; adding the maximum rounds to its own ulp.
            let bound = 4 * Double(Float.ulpOfOne) + 2 * Double(Float(max(abs(top), abs(exact))).ulp)
            worstValue = max(worstValue, abs(Double(value.values[i]) - exact) / bound)
            for j in 0..<k { worstShare = max(worstShare, abs(Double(shares[j].values[i]) - Foundation.exp(ts[j] - exact))) }
        }
        #expect(worstValue <= 1, "\(kernels): log-sum-exp worst error \(worstValue) of its bound")
        #expect(worstShare < 1e-6, "\(kernels): share worst absolute error \(worstShare)")
        #expect(value.values[12].isNaN && shares[3].values[11] == 0)
        #expect(none.isEmpty && alone.values[12].isNaN)
        #expect((0..<count).allSatisfy { $0 == 12 || alone.values[$0] == value.values[$0] }, "\(kernels): the value depends on whether shares are kept")
    }

    @Test func tanhAndSigmoidMatchLibm() {
        var worstTanh = 0.0, worstSigmoid = 0.0
        for i in 0..<40_000 {
            let base = -20 + Float(i) * 40 / 40_000
            var v = Lanes()
            for l in 0..<8 { v[l] = base + Float(l) * 1e-4 }
            let t = Lanes.tanh(v), s = Lanes.sigmoid(v)
            for l in 0..<8 {
                let x = Double(v[l])
                worstTanh = max(worstTanh, abs(Double(t[l]) - Foundation.tanh(x)))
                worstSigmoid = max(worstSigmoid, abs(Double(s[l]) - 1 / (1 + Foundation.exp(-x))))
            }
        }
        // Absolute error: 1 − 2/(e+1) cancels near 0, where the absolute error stays ~1e-7.
        #expect(worstTanh < 3e-7, "tanh worst absolute error \(worstTanh)")
        #expect(worstSigmoid < 2e-7, "sigmoid worst absolute error \(worstSigmoid)")
        #expect(Lanes.tanh(Lanes(repeating: .nan))[0].isNaN)
        #expect(Lanes.tanh(Lanes(repeating: 1e30))[0] == 1 && Lanes.tanh(Lanes(repeating: -1e30))[0] == -1)
    }

    @Test func sigmoidSaturatesAndKeepsNaN() {
        let s = Lanes.sigmoid(Lanes(-1e30, -100, -88.8, 0, 88.8, 100, 1e30, .nan))
        #expect(s[0] >= 0 && s[0] < 1e-38 && s[1] < 1e-38 && s[2] < 1e-38, "far left is 0 to float precision: \(s)")
        #expect(s[3] == 0.5)
        #expect(s[4] == 1 && s[5] == 1 && s[6] == 1)
        #expect(s[7].isNaN)
    }

    @Test func squareRootIsCorrectlyRoundedPerLane() {
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<10_000 {
            var v = Lanes()
            for l in 0..<8 { v[l] = Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()) & 0x7fff_ffff) }
            let r = Lanes.squareRoot(v)
            for l in 0..<8 where !v[l].isNaN { #expect(r[l] == v[l].squareRoot(), "sqrt(\(v[l]))") }
        }
        let edge = Lanes.squareRoot(Lanes(0, -0.0, .infinity, -1, .nan, 4, .leastNonzeroMagnitude, 2))
        #expect(edge[0] == 0 && edge[1] == 0 && edge[1].sign == .minus && edge[2] == .infinity)
        #expect(edge[3].isNaN && edge[4].isNaN && edge[5] == 2 && edge[6] == Float.leastNonzeroMagnitude.squareRoot() && edge[7] == Float(2).squareRoot())
    }

    @Test func kernelsHandleEveryTailLength() {
        for count in [0, 1, 7, 8, 9, 15, 16, 17, LaneKernels.chunk + 3] {
            let a = (0..<count).map { Float($0) * 0.001 - 3 }, b = (0..<count).map { Float($0 % 7) }
            var out = [Float](repeating: .nan, count: count + 1)   // one sentinel past the end
            a.withUnsafeBufferPointer { ap in b.withUnsafeBufferPointer { bp in out.withUnsafeMutableBufferPointer { op in
                LaneKernels.zipMap(ap.baseAddress ?? UnsafePointer(bitPattern: 8)!, bp.baseAddress ?? UnsafePointer(bitPattern: 8)!,
                                   into: op.baseAddress!, count: count, compute: Compute(threads: 2)) { x, y in x * 2 + y }
            } } }
            #expect((0..<count).allSatisfy { out[$0] == a[$0] * 2 + b[$0] }, "count \(count)")
            #expect(out[count].isNaN, "count \(count): nothing written past the end")
        }
    }

    @Test func totalAddsEveryLane() {
        #expect(Lanes(1, 2, 3, 4, 5, 6, 7, 8).total == 36)
    }
}
