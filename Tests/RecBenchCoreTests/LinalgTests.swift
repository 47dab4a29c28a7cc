import Testing
import RecBenchCore
import Linalg

/// Dense and sparse kernels against naive Double loops.
@Suite(.serialized) struct LinalgTests {

    func naiveProduct(_ a: Matrix, _ b: Matrix) -> [Double] {
        var out = [Double](repeating: 0, count: a.rows * b.columns)
        for i in 0..<a.rows { for j in 0..<b.columns { for k in 0..<a.columns {
            out[i * b.columns + j] += Double(a[i, k]) * Double(b[k, j])
        } } }
        return out
    }

    @Test func gemmSplitOverWorkersMatchesTheNaiveProduct() {
        // Large enough to be split: by rows (m ≥ 128) and by columns (m < 128, n ≥ 256), in
        // every transpose combination (the blocks start at offsets that depend on it).
        for (m, n, k) in [(300, 200, 150), (64, 600, 943), (40, 700, 300)] {
            let a = Fixtures.randomMatrix(rows: m, columns: k, seed: 21), b = Fixtures.randomMatrix(rows: k, columns: n, seed: 22)
            let at = a.transposed(), bt = b.transposed()
            let split = Compute(workers: 2, blasThreads: 1)
            let products = [BLAS.gemm(a, b, compute: split), BLAS.gemm(at, transposeA: true, b, compute: split),
                            BLAS.gemm(a, bt, transposeB: true, compute: split), BLAS.gemm(at, transposeA: true, bt, transposeB: true, compute: split)]
            let naive = naiveProduct(a, b)
            for (v, product) in products.enumerated() {
                let worst = (0..<(m * n)).map { abs(Double(product.values[$0]) - naive[$0]) }.max()!
                #expect(worst < 1e-3, "\(m)×\(n)×\(k) variant \(v): off by \(worst)")
            }
        }
    }

    /// A small output over a long inner dimension (split into fixed slices of k): in every
    /// transpose combination, with α and β (β = 0 must not read c, here NaN), into rows of a
    /// larger c, and with `aRows`, against the naive product; one worker and two agree bit for bit.
    @Test func gemmOverALongInnerDimensionMatchesTheNaiveProduct() {
        let (m, n, k) = (5, 7, 40_003)
        let a = Fixtures.randomMatrix(rows: m, columns: k, seed: 23), b = Fixtures.randomMatrix(rows: k, columns: n, seed: 24)
        let (at, bt) = (a.transposed(), b.transposed()), naive = naiveProduct(a, b)
        for compute in [Compute.serial, Compute(workers: 2, blasThreads: 1)] {
            let products = [BLAS.gemm(a, b, compute: compute), BLAS.gemm(at, transposeA: true, b, compute: compute),
                            BLAS.gemm(a, bt, transposeB: true, compute: compute), BLAS.gemm(at, transposeA: true, bt, transposeB: true, compute: compute)]
            for (v, product) in products.enumerated() {
                let worst = (0..<(m * n)).map { abs(Double(product.values[$0]) - naive[$0]) }.max()!
                #expect(worst < 1e-2, "variant \(v): off by \(worst)")
            }
            var c = Matrix(rows: m + 2, columns: n, values: [Float](repeating: .nan, count: (m + 2) * n))
            BLAS.gemm(a, b, alpha: 2, beta: 0, into: &c, firstRow: 1, compute: compute)
            #expect(c.values[..<n].allSatisfy(\.isNaN) && c.values[((m + 1) * n)...].allSatisfy(\.isNaN), "rows outside firstRow left alone")
            #expect((0..<(m * n)).allSatisfy { abs(Double(c.values[n + $0]) - 2 * naive[$0]) < 2e-2 }, "α = 2, β = 0")
            var d = Matrix(rows: m, columns: n, values: [Float](repeating: 1, count: m * n))
            let padded = Matrix(rows: m + 3, columns: k, values: [Float](repeating: 9, count: 3 * k) + a.values)
            BLAS.gemm(padded, aRows: 3..<(m + 3), b, alpha: 1, beta: 0.5, into: &d, compute: compute)
            #expect((0..<(m * n)).allSatisfy { abs(Double(d.values[$0]) - 0.5 - naive[$0]) < 1e-2 }, "aRows, β = 0.5")
        }
        #expect(BLAS.gemm(a, b, compute: .serial).values == BLAS.gemm(a, b, compute: Compute(workers: 2, blasThreads: 1)).values)
    }

    /// A narrow product (too small for a row or column split; a weight gradient) shared out over
    /// OpenBLAS's own inner blocks gives one call's bits: two workers against one, in every
    /// transpose combination, β 0 and 1, into rows of a larger c, with `aRows`, and for inner
    /// dimensions that end in a short pair of blocks. NFM's and AutoInt's shapes among them.
    @Test func narrowProductsGiveTheSameBitsOnOneWorkerAndTwo() {
        for (m, n, k) in [(64, 64, 4_096), (16, 48, 28_672), (24, 200, 1_777), (100, 10, 9_999)] {
            let a = Fixtures.randomMatrix(rows: m, columns: k, seed: 31), b = Fixtures.randomMatrix(rows: k, columns: n, seed: 32)
            let (at, bt) = (a.transposed(), b.transposed())
            func products(_ compute: Compute) -> [[Float]] {
                var accumulated = Matrix(rows: m + 2, columns: n, values: (0..<((m + 2) * n)).map { Float($0 % 13) - 6 })
                BLAS.gemm(at, transposeA: true, b, alpha: 1, beta: 1, into: &accumulated, firstRow: 1, compute: compute)
                let padded = Matrix(rows: m + 3, columns: k, values: [Float](repeating: 9, count: 3 * k) + a.values)
                var rows = Matrix(rows: m, columns: n)
                BLAS.gemm(padded, aRows: 3..<(m + 3), bt, transposeB: true, into: &rows, compute: compute)
                return [BLAS.gemm(a, b, compute: compute), BLAS.gemm(at, transposeA: true, b, compute: compute),
                        BLAS.gemm(a, bt, transposeB: true, compute: compute), BLAS.gemm(at, transposeA: true, bt, transposeB: true, compute: compute),
                        accumulated, rows].map(\.values)
            }
            let one = products(.serial), two = products(Compute(workers: 2, blasThreads: 1))
            for v in one.indices {
                let differing = zip(one[v], two[v]).filter { $0.bitPattern != $1.bitPattern }.count
                #expect(differing == 0, "\(m)×\(n)×\(k) variant \(v): \(differing) entries differ")
            }
            let naive = naiveProduct(a, b)
            #expect((0..<(m * n)).allSatisfy { abs(Double(two[0][$0]) - naive[$0]) < 1e-2 }, "\(m)×\(n)×\(k) against the naive product")
        }
    }

    /// With the OpenBLAS README installs (0.3.21), the probe finds its blocking, so the shared
    /// path above is the one that ran (another build may block otherwise and fall back to one call).
    @Test(.enabled(if: BLAS.configuration.contains("0.3.21"))) func openBLAS0321sBlockingIsFound() {
        #expect(BLAS.sharesNarrowProducts, "\(BLAS.configuration)")
    }

    /// Row `row` of a times column `column` of b as one fused multiply-add chain in k order.
    func orderedSum(_ a: Matrix, _ b: Matrix, row: Int, column: Int) -> Float {
        var sum: Float = 0
        for p in 0..<a.columns { sum = sum.addingProduct(a[row, p], b[p, column]) }
        return sum
    }

    /// Batch norm's forward with an activation inside equals batch norm then the activation's
    /// own kernel, bit for bit, in each kernel build (the tape's fused op runs only the current
    /// one): 21 columns (a partial group of lanes), 4,000 rows (several chunks), one and two workers.
    @Test(arguments: KernelSet.available)
    func batchNormWithItsActivationEqualsTheTwoPasses(kernels: KernelSet) {
        let x = Fixtures.randomMatrix(rows: 4_000, columns: 21, seed: 61), gamma = Fixtures.randomMatrix(rows: 1, columns: 21, seed: 62)
        let beta = Fixtures.randomMatrix(rows: 1, columns: 21, seed: 63)
        for compute in [Compute.serial, Compute(workers: 2, blasThreads: 1)] {
            let (mean, variance) = BatchNormKernels.statistics(x, compute: compute)
            let plain = BatchNormKernels.forward(x, mean: mean, variance: variance, scale: gamma, shift: beta, eps: 1e-5, compute: compute,
                                                 kernels: kernels).value
            let twoPasses: [PointwiseActivation: Matrix] = [.relu: plain.map(compute) { Lanes.relu($0) },
                                                            .tanh: ActivationKernels.tanh(plain, compute: compute, kernels: kernels),
                                                            .sigmoid: ActivationKernels.sigmoid(plain, compute: compute, kernels: kernels)]
            for (f, expected) in twoPasses {
                let fused = BatchNormKernels.forward(x, mean: mean, variance: variance, scale: gamma, shift: beta, eps: 1e-5, activation: f,
                                                     compute: compute, kernels: kernels).value
                #expect(fused.values == expected.values, "\(kernels), \(f), \(compute)")
            }
        }
    }

    /// Batch norm's passes in C (AVX2) give the Swift passes' bits: the statistics, the forward,
    /// the pullback's column sums (x̂ recomputed or stored, no activation or each one) and its
    /// input gradient. 10, 21, 70 and 600 columns (a partial group of lanes, past one span of
    /// 512 columns) and 1,100 (two workers' blocks), 1,500 rows, one worker and two.
    @Test func batchNormPassesInCGiveTheSwiftPassesBits() {
        guard KernelSet.available.contains(.avx2) else { return }
        for n in [10, 21, 70, 600, 1_100] {
            let x = Fixtures.randomMatrix(rows: 1_500, columns: n, seed: 64), g = Fixtures.randomMatrix(rows: 1_500, columns: n, seed: 65)
            let gamma = Fixtures.randomMatrix(rows: 1, columns: n, seed: 66), beta = Fixtures.randomMatrix(rows: 1, columns: n, seed: 67)
            let y = x.map(.serial) { 0.5 + 0.4 * $0 }   // an activation's output
            for compute in [Compute.serial, Compute(workers: 2, blasThreads: 1)] {
                func run(_ k: KernelSet) -> [Matrix] {
                    let (mean, variance) = BatchNormKernels.statistics(x, compute: compute, kernels: k)
                    let (value, inverse) = BatchNormKernels.forward(x, mean: mean, variance: variance, scale: gamma, shift: beta, eps: 1e-5,
                                                                    compute: compute, kernels: k)
                    var out = [mean, variance, value]
                    let centered = BatchNormKernels.Centered(input: x, mean: mean, inverseStd: inverse)
                    out.append(BatchNormKernels.gradientSums(g, normalized: BatchNormKernels.Centered(normalized: x), compute: compute, kernels: k))
                    for f in [nil, PointwiseActivation.relu, .tanh, .sigmoid] {
                        let activated = f.map { ($0, y) }
                        let sums = BatchNormKernels.gradientSums(g, normalized: centered, activation: activated, compute: compute, kernels: k)
                        out += [sums, BatchNormKernels.inputGradient(g, input: x, mean: mean, inverseStd: inverse, scale: gamma, sums: sums,
                                                                     activation: activated, compute: compute, kernels: k)]
                    }
                    return out
                }
                let (swift, c) = (run(.baseline), run(.avx2))
                #expect(swift.count == 12 && c.count == 12)
                for (i, (a, b)) in zip(swift, c).enumerated() { #expect(a.values == b.values, "n \(n), output \(i), \(compute)") }
            }
        }
    }

    /// A right factor packed once gives the bits of `BLAS.gemm` with it on one thread: tiles of
    /// fewer rows than the register kernel takes (OpenBLAS then) and more, widths under, at and
    /// past a 16-column panel, k = 1 and past a panel's rows, c overwritten and accumulated.
    @Test func aPackedRightFactorGivesTheBitsOfGemm() {
        for (k, n) in [(1, 16), (64, 37), (300, 256)] {
            let packed = PackedRightFactor(Fixtures.randomMatrix(rows: k, columns: n, seed: 71))
            for m in [5, 16, 200] {
                let a = Fixtures.randomMatrix(rows: m, columns: k, seed: 72), start = Fixtures.randomMatrix(rows: m, columns: n, seed: 73)
                for accumulate in [false, true] {
                    var expected = start, got = start
                    BLAS.gemm(a, packed.matrix, beta: accumulate ? 1 : 0, into: &expected, compute: .serial)
                    BLAS.gemm(a, packed, accumulate: accumulate, into: &got)
                    #expect(got.values == expected.values, "k \(k), n \(n), m \(m), accumulate \(accumulate)")
                }
            }
        }
    }

    /// Dense layers' products (short k, narrow n, many rows): in the AVX2 build each entry is
    /// the k-term fused multiply-add chain in order (then + c when β = 1), bit for bit, with
    /// b or bᵀ, into rows of a larger c, from `aRows`, on one worker or two; every build within
    /// rounding of the naive product; with β = 0 (c never read); a dense layer (`BLAS.linear`)
    /// likewise, its bias added to each sum. Shapes: every remainder of a 6-row block, a group
    /// of 96, two workers' blocks, widths under, at and past a 16-column panel, k = 1, 256, 384 and 512.
    @Test(arguments: KernelSet.available)
    func denseLayerProductsAreTheirOrderedSums(kernels: KernelSet) {
        let shapes = [(16, 1, 1), (25, 8, 7), (26, 3, 9), (27, 16, 5), (101, 17, 64), (1_001, 70, 32), (40, 512, 256), (40, 128, 384),
                      (20, 512, 512), (4_000, 16, 70)]
        for (m, n, k) in shapes {
            let a = Fixtures.randomMatrix(rows: m + 2, columns: k, seed: 31), b = Fixtures.randomMatrix(rows: k, columns: n, seed: 32)
            let start = Fixtures.randomMatrix(rows: m + 1, columns: n, seed: 33)
            var ordered = [Float](repeating: 0, count: m * n)
            for i in 0..<m { for j in 0..<n { ordered[i * n + j] = start[i + 1, j] + orderedSum(a, b, row: i + 2, column: j) } }
            for compute in [Compute.serial, Compute(workers: 2, blasThreads: 1)] {
                for transposeB in [false, true] {
                    var c = start
                    BLAS.gemm(a, aRows: 2..<(m + 2), transposeB ? b.transposed() : b, transposeB: transposeB, beta: 1, into: &c, firstRow: 1,
                              compute: compute, kernels: kernels)
                    let label = "\(kernels), \(m)×\(n)×\(k), bᵀ \(transposeB), \(compute)"
                    #expect(c.values[..<n] == start.values[..<n], "\(label): row 0 left alone")
                    let worst = (0..<(m * n)).map { abs(Double(c.values[n + $0]) - Double(ordered[$0])) }.max()!
                    #expect(kernels == .avx2 ? worst == 0 : worst < 1e-3 * Double(k), "\(label): off by \(worst)")
                }
                // β = 0 never reads c (NaN here), and rows past the product's are left alone.
                var fresh = Matrix(rows: m + 2, columns: n, values: [Float](repeating: .nan, count: (m + 2) * n))
                BLAS.gemm(a, aRows: 2..<(m + 2), b, into: &fresh, firstRow: 1, compute: compute, kernels: kernels)
                let sums = (0..<(m * n)).map { orderedSum(a, b, row: $0 / n + 2, column: $0 % n) }
                let off = (0..<(m * n)).map { abs(Double(fresh.values[n + $0]) - Double(sums[$0])) }.max()!
                #expect(kernels == .avx2 ? off == 0 : off < 1e-3 * Double(k), "\(kernels), \(m)×\(n)×\(k), β = 0: off by \(off)")
                #expect(fresh.values[..<n].allSatisfy(\.isNaN) && fresh.values[((m + 1) * n)...].allSatisfy(\.isNaN), "rows outside left alone")
                // A dense layer: the bias row added to each ordered sum.
                let x = Matrix(rows: m, columns: k, values: Array(a.values[(2 * k)...]))
                let bias = Matrix(rows: 1, columns: n, values: Array(start.values[n..<(2 * n)]))
                var layer = Matrix(rows: m, columns: n)
                BLAS.linear(x, b, bias: bias, into: &layer, compute: compute, kernels: kernels)
                let worst = (0..<(m * n)).map { i in
                    abs(Double(layer.values[i]) - Double(orderedSum(a, b, row: i / n + 2, column: i % n) + bias.values[i % n]))
                }.max()!
                #expect(kernels == .avx2 ? worst == 0 : worst < 1e-3 * Double(k), "\(kernels), \(m)×\(n)×\(k), linear: off by \(worst)")
            }
        }
    }

    @Test func gemmMatchesNaiveProductInEveryTransposeCombination() {
        let a = Fixtures.randomMatrix(rows: 7, columns: 5, seed: 1)
        let b = Fixtures.randomMatrix(rows: 5, columns: 9, seed: 2)
        let expected = naiveProduct(a, b)
        let variants = [
            BLAS.gemm(a, b, compute: .serial),
            BLAS.gemm(a.transposed(), transposeA: true, b, compute: .serial),
            BLAS.gemm(a, b.transposed(), transposeB: true, compute: .serial),
            BLAS.gemm(a.transposed(), transposeA: true, b.transposed(), transposeB: true, compute: .serial),
        ]
        for c in variants {
            #expect(c.rows == 7 && c.columns == 9)
            for (x, y) in zip(c.values, expected) { #expect(abs(Double(x) - y) < 1e-5) }
        }
    }

    @Test func gramBySyrkAndBySparseRowsMatchNaiveProduct() {
        let x = Fixtures.randomSparse(rows: 40, columns: 13, density: 0.2, seed: 3)
        let expected = naiveProduct(x.dense().transposed(), x.dense())
        for g in [BLAS.gram(x.dense(), compute: .serial), x.gram(compute: .serial)] {
            for (a, b) in zip(g.values, expected) { #expect(abs(Double(a) - b) < 1e-4) }
        }
    }

    @Test func gramRowsStreamedOnePerWorkerMatchTheNaiveProduct() {
        // 70 columns: three chunks of rows, so two workers each reuse their buffer.
        let x = Fixtures.randomSparse(rows: 60, columns: 70, density: 0.15, seed: 5)
        let expected = naiveProduct(x.dense().transposed(), x.dense())
        let rows = Rows(count: 70, width: 70)
        x.forEachGramRow(compute: Compute(threads: 2)) { i, row in
            rows.store(i, row)
            row[0] = .nan   // the body may scribble on its row: the next row starts from zero
        }
        for i in 0..<70 { for j in 0..<70 { #expect(abs(Double(rows.values[i * 70 + j]) - expected[i * 70 + j]) < 1e-4) } }
    }

    @Test func choleskyInverseTimesMatrixIsIdentity() throws {
        let x = Fixtures.randomMatrix(rows: 30, columns: 12, seed: 4)
        var g = BLAS.gram(x, compute: .serial)
        for i in 0..<12 { g[i, i] += 1 }
        let original = g
        try BLAS.invertSymmetricPositiveDefinite(&g, compute: .serial)
        let product = naiveProduct(original, g)
        for i in 0..<12 { for j in 0..<12 {
            #expect(abs(product[i * 12 + j] - (i == j ? 1 : 0)) < 1e-4)
        } }
        // The inverse of a symmetric matrix is symmetric: the mirrored half must agree.
        for i in 0..<12 { for j in 0..<12 { #expect(g[i, j] == g[j, i]) } }
    }

    @Test func upperOnlyGramIsEnoughForTheInverse() throws {
        let x = Fixtures.randomSparse(rows: 50, columns: 10, density: 0.3, seed: 14)
        let full = x.gram(compute: .serial), upper = x.gram(upperOnly: true, compute: .serial)
        for i in 0..<10 { for j in 0..<10 { #expect(upper[i, j] == (j >= i ? full[i, j] : 0)) } }
        var a = full, b = upper
        for i in 0..<10 { a[i, i] += 2; b[i, i] += 2 }
        // Both with the same threads: a different count may round differently.
        try BLAS.invertSymmetricPositiveDefinite(&a, compute: .serial)
        try BLAS.invertSymmetricPositiveDefinite(&b, compute: .serial)
        #expect(a == b)
    }

    @Test func choleskyRejectsAnIndefiniteMatrix() {
        var m = Matrix(rows: 2, columns: 2, values: [1, 2, 2, 1])   // eigenvalues 3 and -1
        #expect(throws: LinalgError.notPositiveDefinite(order: 2)) { try BLAS.invertSymmetricPositiveDefinite(&m, compute: .serial) }
    }

    @Test func sparseFromEntriesSumsDuplicatesAndSortsColumns() {
        let m = SparseMatrix(rows: 2, columns: 4, rowIndices: [1, 0, 1, 1], columnIndices: [3, 2, 0, 3])
        #expect(m.nonzeroCount == 3)
        #expect(Array(m.columns(ofRow: 1)) == [0, 3])
        #expect(m[1, 3] == 2)
        #expect(m[0, 2] == 1)
        #expect(m[0, 0] == 0)
        #expect(m.transposed().transposed() == m)
    }

    @Test func scalingRowsAndColumnsAreProductsWithADiagonal() {
        let m = Fixtures.randomMatrix(rows: 4, columns: 3, seed: 5)
        let rowScales: [Float] = [2, -1, 0.5, 0], columnScales: [Float] = [3, 0, -2]
        func diagonal(_ s: [Float]) -> Matrix {
            var d = Matrix(rows: s.count, columns: s.count)
            for (i, x) in s.enumerated() { d[i, i] = x }
            return d
        }
        let rows = m.scalingRows(by: rowScales), columns = m.scalingColumns(by: columnScales)
        let expectedRows = naiveProduct(diagonal(rowScales), m), expectedColumns = naiveProduct(m, diagonal(columnScales))
        #expect(rows.rows == 4 && rows.columns == 3 && columns.rows == 4 && columns.columns == 3)
        for i in 0..<12 {
            #expect(abs(Double(rows.values[i]) - expectedRows[i]) < 1e-6)
            #expect(abs(Double(columns.values[i]) - expectedColumns[i]) < 1e-6)
        }
    }

    /// Every length: empty, shorter than a lane, the 16-wide body, its 8-wide and partial tails.
    @Test func sumOfSquaresMatchesADoubleSum() {
        for count in [0, 1, 7, 8, 15, 16, 23, 33, 1001] {
            let m = Fixtures.randomMatrix(rows: 1, columns: count, seed: UInt64(count) + 11)
            let exact = m.values.reduce(0.0) { $0 + Double($1) * Double($1) }
            #expect(abs(Double(m.sumOfSquares) - exact) <= 1e-5 * max(1, exact), "\(count): \(m.sumOfSquares) vs \(exact)")
        }
    }

    /// Column sums in blocks of columns over the workers: each column added down its rows in
    /// order (so equal, bit for bit, to a plain loop), for widths with and without a partial
    /// group of lanes, one block and several, on one worker and two.
    @Test func columnSumsAddEachColumnInRowOrder() {
        var rng = SeededGenerator(seed: 11)
        for n in [1, 7, 32, 33, 192, 300, 513, 1_100] {
            let rows = 517
            let m = Matrix(rows: rows, columns: n, values: (0..<(rows * n)).map { _ in rng.nextUnitFloat() * 2 - 1 })
            var plain = [Float](repeating: 0, count: n)
            for r in 0..<rows { for j in 0..<n { plain[j] += m.values[r * n + j] } }
            #expect(m.columnSums(.serial).values == plain, "\(n) columns, one worker")
            #expect(m.columnSums(Compute(threads: 2)).values == plain, "\(n) columns, two workers")
        }
    }

    @Test func finitenessFindsEveryNonFiniteValue() {
        #expect(Matrix(rows: 3, columns: 7, repeating: 3e38).isFinite)
        #expect(Matrix(rows: 0, columns: 0).isFinite)
        for bad in [Float.infinity, -.infinity, .nan] {
            for position in [0, 9, 20] {   // a full vector of eight lanes, and the partial tail
                var m = Matrix(rows: 3, columns: 7, repeating: -2)
                m.values[position] = bad
                #expect(!m.isFinite, "\(bad) at \(position)")
            }
        }
    }

    /// Every kernel build this CPU runs (baseline, and AVX2 + FMA where present).
    @Test(arguments: KernelSet.available)
    func sparseTimesDenseAndSparseMatchNaiveProduct(kernels: KernelSet) {
        let x = Fixtures.randomSparse(rows: 20, columns: 15, density: 0.3, seed: 5)
        let d = Fixtures.randomMatrix(rows: 15, columns: 75, seed: 6)
        let s = Fixtures.randomSparse(rows: 15, columns: 75, density: 0.4, seed: 7)
        let users: [Int32] = [19, 0, 7, 7]
        var out = Matrix(rows: users.count, columns: 75, repeating: 99)
        x.multiply(rows: users[...], by: d, into: &out, compute: Compute(threads: 2), kernels: kernels)
        let full = naiveProduct(x.dense(), d)
        var outSparse = Matrix(rows: users.count, columns: 75, repeating: 99)
        x.multiply(rows: users[...], bySparse: s, into: &outSparse, compute: Compute(threads: 2))
        let fullSparse = naiveProduct(x.dense(), s.dense())
        // Adding onto a filled output: 3 + product.
        var added = Matrix(rows: users.count, columns: 75, repeating: 3)
        x.multiply(rows: users[...], by: d, into: &added, adding: true, compute: Compute(threads: 2), kernels: kernels)
        for (r, u) in users.enumerated() { for j in 0..<75 {
            #expect(abs(Double(out[r, j]) - full[Int(u) * 75 + j]) < 1e-5)
            #expect(abs(Double(added[r, j]) - 3 - full[Int(u) * 75 + j]) < 1e-5)
            #expect(abs(Double(outSparse[r, j]) - fullSparse[Int(u) * 75 + j]) < 1e-5)
        } }
        // No entries at all: a zero product (or the output untouched, when adding).
        var none = Matrix(rows: 2, columns: 75, repeating: 5)
        SparseMatrix(rows: 3, columns: 15).multiply(rows: [0, 2], by: d, into: &none, compute: Compute(threads: 2), kernels: kernels)
        #expect(none.values.allSatisfy { $0 == 0 })
        // Many rows: several 64-row tiles of the AVX2 build, the last one partial.
        let tall = Fixtures.randomSparse(rows: 150, columns: 15, density: 0.3, seed: 8)
        let every = Array(0..<Int32(150))
        var tallOut = Matrix(rows: 150, columns: 75, repeating: 99)
        tall.multiply(rows: every[...], by: d, into: &tallOut, compute: Compute(threads: 2), kernels: kernels)
        let tallFull = naiveProduct(tall.dense(), d)
        #expect((0..<150 * 75).allSatisfy { abs(Double(tallOut.values[$0]) - tallFull[$0]) < 1e-5 })
        // 75 columns: one 64-wide register block and an 11-wide tail (8 lanes + 3). The rows
        // exercised have several groups of four entries plus singles.
        #expect(users.contains { x.entries(ofRow: Int($0)).count > 4 && x.entries(ofRow: Int($0)).count % 4 != 0 })
    }

    @Test(arguments: KernelSet.available)
    func topKAgreesWithAFullSortIncludingTiesAndMaskedEntries(kernels: KernelSet) {
        var rng = SeededGenerator(seed: 8)
        for trial in 0..<200 {
            let n = 1 + rng.nextInt(below: 60)
            // Few distinct values so ties are common; some entries masked or NaN.
            let row: [Float] = (0..<n).map { _ in
                switch rng.nextInt(below: 10) {
                case 0: return -.infinity
                case 1: return .nan
                default: return Float(rng.nextInt(below: 5))
                }
            }
            let k = 1 + rng.nextInt(below: 70)
            let expected = (0..<n).filter { row[$0] > -.infinity }
                .sorted { row[$0] != row[$1] ? row[$0] > row[$1] : $0 < $1 }
                .prefix(k).map(Int32.init)
            let got = row.withUnsafeBufferPointer { TopK.select($0, k: k, kernels: kernels) }
            #expect(got == Array(expected), "trial \(trial): n=\(n) k=\(k) \(kernels)")
        }
    }

    @Test(arguments: KernelSet.available)
    func topKAgreesWithAFullSortOnLongRowsThatRefillTheCandidateBuffer(kernels: KernelSet) {
        var rng = SeededGenerator(seed: 12)
        for trial in 0..<300 {
            let n = 1 + rng.nextInt(below: 3_000)
            // Ascending runs make every score a new candidate (the worst case for the floor);
            // few distinct values make ties at the floor common.
            let shape = trial % 3
            let row: [Float] = (0..<n).map { j in
                if rng.nextInt(below: 20) == 0 { return rng.nextInt(below: 2) == 0 ? -.infinity : .nan }
                switch shape {
                case 0: return Float(j)
                case 1: return Float(rng.nextInt(below: 7))
                default: return Float(rng.nextInt(below: 1_000_000)) / 7
                }
            }
            let k = 1 + rng.nextInt(below: trial % 10 == 0 ? 200 : 25)
            let expected = (0..<n).filter { row[$0] > -.infinity }
                .sorted { row[$0] != row[$1] ? row[$0] > row[$1] : $0 < $1 }
                .prefix(k).map(Int32.init)
            let got = row.withUnsafeBufferPointer { TopK.select($0, k: k, kernels: kernels) }
            #expect(got == Array(expected), "trial \(trial): n=\(n) k=\(k) shape \(shape) \(kernels)")
        }
    }

    @Test func parallelTopKOverRowsMatchesPerRowSelection() {
        let scores = Fixtures.randomMatrix(rows: 100, columns: 37, seed: 9)
        let (items, counts) = TopK.select(scores, k: 5, compute: Compute(threads: 2))
        for r in 0..<100 {
            let single = scores.values.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0[(r * 37)..<((r + 1) * 37)]) }
            let expected = TopK.select(single, k: 5)
            #expect(counts[r] == 5)
            #expect(Array(items[(r * 5)..<((r + 1) * 5)]) == expected)
        }
    }

    @Test func seededGeneratorIsReproducibleAndStreamsDiffer() {
        var a = SeededGenerator(seed: 42), b = SeededGenerator(seed: 42), c = SeededGenerator(seed: 42, stream: 1)
        let sa = (0..<5).map { _ in a.next() }, sb = (0..<5).map { _ in b.next() }, sc = (0..<5).map { _ in c.next() }
        #expect(sa == sb)
        #expect(sa != sc)
        var d = SeededGenerator(seed: 1)
        let draws = (0..<10_000).map { _ in d.nextInt(below: 10) }
        for v in 0..<10 { #expect(abs(draws.filter { $0 == v }.count - 1000) < 150) }
    }

    @Test func sha256MatchesTheStandardTestVectors() {
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // The buffer path and the bulk path must agree across block boundaries.
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        var bulk = SHA256()
        bytes.withUnsafeBytes { bulk.update($0) }
        var bytewise = SHA256()
        bytewise.update(bytes.lazy.map { $0 })   // not contiguous: byte by byte
        let digest = bulk.hexDigest()
        #expect(digest == bytewise.hexDigest())
        // Uneven pieces, so blocks straddle buffered and direct updates.
        for piece in [1, 7, 63, 64, 65, 200] {
            var chunked = SHA256()
            for start in stride(from: 0, to: bytes.count, by: piece) {
                bytes[start..<min(bytes.count, start + piece)].withUnsafeBytes { chunked.update($0) }
            }
            #expect(chunked.hexDigest() == digest, "pieces of \(piece)")
        }
    }
}

/// Rows written by concurrent workers, each to its own slice.
private final class Rows: @unchecked Sendable {
    let storage: UnsafeMutableBufferPointer<Float>
    let width: Int
    init(count: Int, width: Int) {
        storage = .allocate(capacity: count * width)
        storage.initialize(repeating: .nan)
        self.width = width
    }
    deinit { storage.deallocate() }
    var values: [Float] { Array(storage) }
    func store(_ i: Int, _ row: UnsafeMutableBufferPointer<Float>) {
        for j in 0..<width { storage[i * width + j] = row[j] }
    }
}
