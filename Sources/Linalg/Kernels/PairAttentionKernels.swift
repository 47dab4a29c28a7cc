import CLanes

/// AFM's attentional pooling over field pairs in one pass per chunk of rows: for each row's
/// side-by-side field embeddings e (F · d) and pairs (f, g), x = e_f ⊙ e_g, l = hᵀ relu(x W),
/// v = q · x, and out = Σ softmax(l) v. Composed of ops, every row's P pair products, logits,
/// values and their gradients were rows · P blocks written and read back (21 pairs × 4,096 rows
/// a batch for ml-100k); here they live in a chunk's scratch. AVX2 + FMA only (`isAvailable`);
/// W's, h's gradients are added in chunk order, so results do not depend on the worker count.
public enum PairAttentionKernels {
    static let chunk = 64   // rows: their pair rows' x, dx and dz (≈ 280 KB for AFM's 21 pairs at a = 25) stay in L2

    /// Whether this CPU runs the kernels (callers compose the ops otherwise).
    public static func isAvailable(_ kernels: KernelSet = .current) -> Bool { ScoreMLPKernels.isAvailable(kernels) }

    /// The forward's result and what its pullback reads: per pair row its softmax weight w, its
    /// ∂out/∂l and the signs of its hidden layer (ap / 8 bytes); per row Σ_k ∂out/∂l_k relu(z_k).
    public struct Saved: Sendable {
        public let out: Matrix
        let weights: [Float], coef: [Float], signs: [UInt8], hsum: [Float]
    }

    /// The pairs as the kernels read them: field indices f and g, side by side.
    struct Fields {
        let f: [Int32], g: [Int32]
        init(_ pairs: [(Int, Int)], fields: Int) {
            precondition(pairs.allSatisfy { $0.0 >= 0 && $0.0 < fields && $0.1 >= 0 && $0.1 < fields }, "pairAttention: a pair names no field")
            f = pairs.map { Int32($0.0) }; g = pairs.map { Int32($0.1) }
        }
    }

    /// out (rows × 1) for e (rows × F·d), W (d × a), h (a × 1), q (rows × d).
    public static func forward(_ e: Matrix, width d: Int, pairs: [(Int, Int)], weight: Matrix, output: Matrix, values q: Matrix,
                               compute: Compute) -> Saved {
        precondition(isAvailable(), "PairAttentionKernels: needs AVX2 + FMA")
        precondition(d > 0 && e.columns % d == 0 && weight.rows == d && q.columns == d && q.rows == e.rows, "pairAttention: shapes differ")
        let n = e.rows, count = pairs.count, fields = Fields(pairs, fields: e.columns / d)
        let p = ScoreMLPKernels.Padded(weight: weight, bias: nil, output: output), o = p.offsets, fd = e.columns, ap = p.ap
        var weights = [Float](repeating: 0, count: n * count), coef = weights, hsum = [Float](repeating: 0, count: n * ap)
        var signs = [UInt8](repeating: 0, count: n * count * ap / 8), out = Matrix(rows: n, columns: 1)
        guard n > 0 && count > 0 else { return Saved(out: out, weights: weights, coef: coef, signs: signs, hsum: hsum) }
        weights.withUnsafeMutableBufferPointer { wp in
            coef.withUnsafeMutableBufferPointer { cp in
                signs.withUnsafeMutableBufferPointer { sp in
                    hsum.withUnsafeMutableBufferPointer { hp in
                        out.values.withUnsafeMutableBufferPointer { op in
                            // Each chunk writes its own rows of every output.
                            let written = UnsafeShared((wp.baseAddress!, cp.baseAddress!, sp.baseAddress!, hp.baseAddress!, op.baseAddress!))
                            Matrix.withBuffers(reading: [e, q, p.matrix]) { b in
                                compute.forEachChunk(count: n, chunkSize: chunk) { rows in
                                    let (w, c, s, h, out) = written.value, r0 = rows.lowerBound
                                    var scratch = [Float](repeating: 0, count: count * (d + ap))   // one row's x | relu
                                    fields.f.withUnsafeBufferPointer { pf in
                                        fields.g.withUnsafeBufferPointer { pg in
                                            scratch.withUnsafeMutableBufferPointer { x in
                                                recbench_pair_attention_forward_avx2(
                                                    b.read[0] + r0 * fd, fd, d, pf.baseAddress!, pg.baseAddress!, count, b.read[1] + r0 * d,
                                                    b.read[2] + o.w, b.read[2] + o.b, b.read[2] + o.h, ap, rows.count, x.baseAddress!,
                                                    x.baseAddress! + count * d, w + r0 * count, c + r0 * count, s + r0 * count * ap / 8,
                                                    h + r0 * ap, out + r0)
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return Saved(out: out, weights: weights, coef: coef, signs: signs, hsum: hsum)
    }

    /// The gradients of e, q, W and h given out's gradient `g` (rows × 1).
    public static func backward(_ g: Matrix, _ e: Matrix, width d: Int, pairs: [(Int, Int)], weight: Matrix, output: Matrix,
                                values q: Matrix, saved: Saved, compute: Compute) -> (e: Matrix, q: Matrix, weight: Matrix, output: Matrix) {
        let n = e.rows, count = pairs.count, fields = Fields(pairs, fields: e.columns / d)
        let p = ScoreMLPKernels.Padded(weight: weight, bias: nil, output: output), o = p.offsets, fd = e.columns, ap = p.ap
        precondition(d > 0 && e.columns % d == 0 && weight.rows == d && q.columns == d && q.rows == n && g.values.count == n
                     && saved.weights.count == n * count && saved.coef.count == n * count && saved.hsum.count == n * ap
                     && saved.signs.count == n * count * ap / 8, "pairAttention: the pullback's shapes differ from the forward's")
        guard n > 0 && count > 0 else {   // no pairs: out is 0, and so is every gradient
            return (Matrix(rows: n, columns: fd), Matrix(rows: n, columns: d), Matrix(rows: d, columns: p.a), Matrix(rows: p.a, columns: 1))
        }
        var outputs = [Matrix(uninitializedRows: n, columns: fd), Matrix(uninitializedRows: n, columns: d)]   // the kernel writes every row
        let partialCount = d * ap + ap   // dW | dh
        let sums: [[Float]] = Matrix.withBuffers(reading: [g, e, q, p.matrix], writing: &outputs) { b in
            saved.withBuffers { w, c, s, h in
                let kept = UnsafeShared((w, c, s, h))   // read-only
                return compute.mapChunks(count: n, chunkSize: chunk) { rows -> [Float] in
                    let r0 = rows.lowerBound, pairRows = rows.count * count, (w, c, s, h) = kept.value
                    var partial = [Float](repeating: 0, count: partialCount)
                    // x | dx | dz, each written before it is read (a zero-filled 280 KB per chunk cost a pass of its own).
                    withUnsafeTemporaryAllocation(of: Float.self, capacity: pairRows * (2 * d + ap)) { x in
                        partial.withUnsafeMutableBufferPointer { sums in
                            fields.f.withUnsafeBufferPointer { pf in
                                fields.g.withUnsafeBufferPointer { pg in
                                    let x = x.baseAddress!, dx = x + pairRows * d, dz = dx + pairRows * d
                                    recbench_pair_attention_backward_avx2(
                                        b.read[0] + r0, b.read[1] + r0 * fd, fd, d, pf.baseAddress!, pg.baseAddress!, count,
                                        b.read[2] + r0 * d, b.read[3] + o.wt, b.read[3] + o.h, ap, (p.a + 3) / 4 * 4, rows.count,
                                        w + r0 * count, c + r0 * count, s + r0 * count * ap / 8, h + r0 * ap,
                                        x, dx, dz, b.write[0] + r0 * fd, b.write[1] + r0 * d, sums.baseAddress!, sums.baseAddress! + d * ap)
                                }
                            }
                        }
                    }
                    return partial
                }
            }
        }
        var total = [Float](repeating: 0, count: partialCount)
        for s in sums { for j in total.indices { total[j] += s[j] } }   // chunk order: independent of the worker count
        let a = p.a
        let dw = Matrix(rows: d, columns: a, values: (0..<d).flatMap { k in total[(k * ap)..<(k * ap + a)] })
        let dh = Matrix(rows: a, columns: 1, values: Array(total[(d * ap)..<(d * ap + a)]))
        return (outputs[0], outputs[1], dw, dh)
    }
}

extension PairAttentionKernels.Saved {
    /// `body` with the kept arrays' base addresses (read-only, shared by the workers).
    func withBuffers<R>(_ body: (UnsafePointer<Float>, UnsafePointer<Float>, UnsafePointer<UInt8>, UnsafePointer<Float>) -> R) -> R {
        weights.withUnsafeBufferPointer { w in
            coef.withUnsafeBufferPointer { c in
                signs.withUnsafeBufferPointer { s in
                    hsum.withUnsafeBufferPointer { h in body(w.baseAddress!, c.baseAddress!, s.baseAddress!, h.baseAddress!) }
                }
            }
        }
    }
}
