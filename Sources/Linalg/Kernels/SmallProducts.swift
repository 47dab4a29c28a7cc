import CLanes

/// `c = op(a) · op(b)` (or `+ c`) for the products of dense layers: a short inner dimension and
/// a narrow output over many rows (`applies`), where OpenBLAS packs the tall left factor for
/// only k steps of work (56 against 83 GFLOP/s on one core for a 64 → 64 layer,
/// docs/performance.md). The right factor is packed once per product; rows go to the workers in
/// fixed chunks. Each entry is the same k-term sum in the same order for any worker count.
/// AVX2 + FMA only.
enum SmallProducts {
    static let maxInner = 512, maxColumns = 512

    /// Whether `gemm` runs the product here: no transposed left factor, α = 1, β 0 or 1, k and n
    /// within the kernel's blocks, and enough rows to repay packing the right factor.
    static func applies(m: Int, n: Int, k: Int, transposeA: Bool, alpha: Float, beta: Float, kernels: KernelSet) -> Bool {
        kernels == .avx2 && !transposeA && alpha == 1 && (beta == 0 || beta == 1) && k <= maxInner && n <= maxColumns && m >= 16 && k > 0 && n > 0
    }

    /// Whether a kernel that builds its left factor in cache (a convolution's taps, CIN's outer
    /// products) multiplies it here: AVX2 and k, n within the kernel's blocks.
    static func registerKernel(_ kernels: KernelSet, inner: Int, columns: Int) -> Bool {
        kernels == .avx2 && inner <= maxInner && columns <= maxColumns
    }

    /// Per-block weight gradients (each rows × columns) added in block order: the sum such kernels
    /// return, the same for any worker count.
    static func sum(_ partials: [Matrix?], rows: Int, columns: Int) -> Matrix {
        var total = Matrix(rows: rows, columns: columns)
        total.values.withUnsafeMutableBufferPointer { s in
            for partial in partials { partial!.values.withUnsafeBufferPointer { q in for i in 0..<s.count { s[i] += q[i] } } }
        }
        return total
    }

    /// op(b) (k × n: b, or bᵀ when `transposed`) in the kernel's 16-column panels, the columns past n zero.
    static func pack(_ b: Matrix, transposed: Bool, k: Int, n: Int) -> Matrix {
        let panels = (n + Int(RECBENCH_GEMM_PANEL) - 1) / Int(RECBENCH_GEMM_PANEL)
        var packed = Matrix(uninitializedRows: panels * k, columns: Int(RECBENCH_GEMM_PANEL))
        b.values.withUnsafeBufferPointer { pb in
            packed.values.withUnsafeMutableBufferPointer { recbench_gemm_pack(pb.baseAddress!, max(1, b.columns), transposed ? 1 : 0, k, n, $0.baseAddress!) }
        }
        return packed
    }

    /// Rows `firstRow ..< firstRow + m` of c from a's rows `aOffset ..< aOffset + m`, plus c when
    /// `accumulate`, plus the 1 × n `bias` in every row when given.
    static func gemm(_ a: Matrix, aOffset: Int, _ b: Matrix, transposeB: Bool, accumulate: Bool, bias: Matrix? = nil, into c: inout Matrix,
                     firstRow: Int, shape: (m: Int, n: Int, k: Int), compute: Compute) {
        let (m, n, k) = shape, packed = pack(b, transposed: transposeB, k: k, n: n)
        // From 4 M multiply-adds (BLAS.gemm's threshold for a split), one block of rows per worker, in whole row groups.
        let workers = m * n * k >= 1 << 22 ? compute.activeWorkers : 1
        let chunk = ((m + workers - 1) / workers + 95) / 96 * 96, lda = a.columns
        precondition(bias.map { $0.rows == 1 && $0.columns == n } ?? true, "gemm: the bias is not 1 × \(n)")
        Matrix.withBuffers(reading: [a, packed, bias ?? packed]) { buffers in   // packed stands in for no bias: never read
            c.values.withUnsafeMutableBufferPointer { pc in
                let out = UnsafeShared(pc.baseAddress!)
                compute.forEachChunk(count: m, chunkSize: chunk) { rows in   // disjoint rows of c
                    recbench_gemm_rows_avx2(rows.count, n, k, buffers.read[0] + (aOffset + rows.lowerBound) * lda, lda, buffers.read[1],
                                            out.value + (firstRow + rows.lowerBound) * n, n, accumulate ? 1 : 0, bias == nil ? nil : buffers.read[2])
                }
            }
        }
    }
}

/// A right factor packed once for many products with it (a scorer's item tiles through the same
/// layer), where `BLAS.gemm` packs it again for every product.
public struct PackedRightFactor: Sendable {
    /// The factor as given (k × n).
    public let matrix: Matrix
    /// Its panels, when the register kernel takes products with it.
    let panels: Matrix?

    public init(_ b: Matrix, kernels: KernelSet = .current) {
        matrix = b
        let fits = SmallProducts.registerKernel(kernels, inner: b.rows, columns: b.columns) && b.rows > 0 && b.columns > 0
        panels = fits ? SmallProducts.pack(b, transposed: false, k: b.rows, n: b.columns) : nil
    }
}

extension BLAS {
    /// `gemm(a, b.matrix, beta: accumulate ? 1 : 0, into: &c, compute: .serial)` on the calling
    /// thread, reading b's panels as packed: the same products, so the same bits.
    public static func gemm(_ a: Matrix, _ b: PackedRightFactor, accumulate: Bool, into c: inout Matrix, kernels: KernelSet = .current) {
        let (m, n, k) = (a.rows, b.matrix.columns, a.columns)
        guard let panels = b.panels,
              SmallProducts.applies(m: m, n: n, k: k, transposeA: false, alpha: 1, beta: accumulate ? 1 : 0, kernels: kernels) else {
            return gemm(a, b.matrix, beta: accumulate ? 1 : 0, into: &c, compute: .serial, kernels: kernels)
        }
        precondition(k == b.matrix.rows && c.rows == m && c.columns == n, "gemm: \(m)×\(k) · \(b.matrix.rows)×\(n) into \(c.rows)×\(c.columns)")
        Matrix.withBuffers(reading: [a, panels]) { buffers in
            c.values.withUnsafeMutableBufferPointer { pc in
                recbench_gemm_rows_avx2(m, n, k, buffers.read[0], k, buffers.read[1], pc.baseAddress!, n, accumulate ? 1 : 0, nil)
            }
        }
    }
}
