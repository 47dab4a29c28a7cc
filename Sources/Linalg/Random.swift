import CLanes
/// A seeded, portable pseudo-random generator (xoshiro256**, seeded through SplitMix64).
/// The same seed gives the same stream on every platform and core count.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var s0, s1, s2, s3: UInt64

    /// A generator whose stream depends only on `seed` and the optional `stream` label
    /// (use one stream per (seed, epoch, chunk), never one per thread).
    public init(seed: UInt64, stream: UInt64 = 0) {
        var x = seed &+ 0x9E37_79B9_7F4A_7C15 &* (stream &+ 1)
        func splitMix() -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = splitMix(); s1 = splitMix(); s2 = splitMix(); s3 = splitMix()
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3
        s2 ^= t
        s3 = (s3 << 45) | (s3 >> 19)
        return result
    }

    /// A uniform float in [0, 1).
    public mutating func nextUnitFloat() -> Float {
        Float(next() >> 40) * (1.0 / Float(1 << 24))
    }

    /// A uniform integer in `0..<bound`, without modulo bias.
    public mutating func nextInt(below bound: Int) -> Int {
        precondition(bound > 0, "nextInt(below:) needs a positive bound")
        return Int(truncatingIfNeeded: next(upperBound: UInt64(bound)))
    }
}

extension Matrix {
    /// A dropout mask: each entry 0 with probability `rate`, else 1/(1 − rate) (inverted
    /// dropout, as torch's). Each chunk of 32,768 entries has its own stream of `seed`
    /// (`SeededGenerator(seed:stream:)`, stream = chunk), so workers fill chunks in parallel
    /// and the mask is the same for any worker count and either kernel build. Each 64-bit draw
    /// gives two 24-bit uniforms (u < rate ⟺ u·2⁻²⁴ < rate, as `nextUnitFloat` compares).
    public static func dropoutMask(rows: Int, columns: Int, rate: Float, seed: UInt64, compute: Compute,
                                   kernels: KernelSet = .current) -> Matrix {
        let (keep, threshold) = dropoutConstants(rate)
        var mask = Matrix(uninitializedRows: rows, columns: columns)
        let count = mask.values.count, chunk = Int(RECBENCH_MASK_CHUNK), chunks = (count + chunk - 1) / chunk
        guard count > 0 else { return mask }
        mask.values.withUnsafeMutableBufferPointer { m in
            // Written as float bits (0 or keep's): each worker fills its own chunks.
            let shared = UnsafeShared(UnsafeMutableRawPointer(m.baseAddress!).assumingMemoryBound(to: UInt32.self))
            compute.forEachChunk(count: chunks, chunkSize: 4) { group in
                recbench_dropout_mask(shared.value, count, seed, group.lowerBound, group.count, threshold, keep, kernels == .avx2 ? 1 : 0)
            }
        }
        return mask
    }

    /// The mask's constants: 1/(1 − rate) as float bits, and the 24-bit uniform below which an entry drops.
    static func dropoutConstants(_ rate: Float) -> (keep: UInt32, threshold: UInt64) {
        ((1 / (1 - rate)).bitPattern, UInt64((Double(rate) * 16_777_216).rounded(.up)))
    }
}

extension Matrix {
    /// `self ⊙ dropoutMask(rows:columns:rate:seed:)` without the mask: each worker draws its
    /// chunks of the mask and multiplies them as they are drawn. The same bits as the product
    /// with the stored mask (a pullback that needs it again keeps it as bits:
    /// `droppedOutKeepingMask`).
    public func droppedOut(rate: Float, seed: UInt64, compute: Compute, kernels: KernelSet = .current) -> Matrix {
        droppedOut(rate: rate, seed: seed, keeping: false, compute: compute, kernels: kernels).value
    }

    /// `droppedOut` and its mask as bits, one per entry (entry e kept ⟺ bit e % 8 of byte e / 8):
    /// `droppedOut(kept:rate:)` then applies it to a gradient without drawing it again.
    public func droppedOutKeepingMask(rate: Float, seed: UInt64, compute: Compute, kernels: KernelSet = .current) -> (value: Matrix, kept: [UInt8]) {
        droppedOut(rate: rate, seed: seed, keeping: true, compute: compute, kernels: kernels)
    }

    private func droppedOut(rate: Float, seed: UInt64, keeping: Bool, compute: Compute, kernels: KernelSet) -> (value: Matrix, kept: [UInt8]) {
        let (keep, threshold) = Matrix.dropoutConstants(rate)
        var outputs = [Matrix(uninitializedRows: rows, columns: columns)]
        let count = values.count, chunk = Int(RECBENCH_MASK_CHUNK), chunks = (count + chunk - 1) / chunk
        var kept = [UInt8](repeating: 0, count: keeping ? (count + 7) / 8 : 0)
        guard count > 0 else { return (outputs[0], kept) }
        let avx2 = kernels == .avx2
        #if arch(x86_64)
        let scratchEntries = avx2 ? 0 : 4 * chunk   // the AVX2 path multiplies as it draws
        #else
        let scratchEntries = 4 * chunk   // C has no AVX2 path here, whatever `kernels` says
        #endif
        kept.withUnsafeMutableBufferPointer { k in
            let bits = UnsafeShared(keeping ? k.baseAddress : nil)   // an empty array's buffer may still have an address
            Matrix.withBuffers(reading: [self], writing: &outputs) { b in
                compute.forEachChunk(count: chunks, chunkSize: 4) { group in   // each worker owns its chunks of the output and their bytes
                    withUnsafeTemporaryAllocation(of: UInt32.self, capacity: scratchEntries) { scratch in
                        recbench_dropout_apply(b.read[0], b.write[0], bits.value, scratch.baseAddress, count, seed, group.lowerBound, group.count,
                                               threshold, keep, avx2 ? 1 : 0)
                    }
                }
            }
        }
        return (outputs[0], kept)
    }

    /// self ⊙ the mask `kept` holds (`droppedOutKeepingMask`'s, for the same rate): entry for
    /// entry the product `droppedOut` forms with the seed's mask.
    public func droppedOut(kept: [UInt8], rate: Float, compute: Compute, kernels: KernelSet = .current) -> Matrix {
        let count = values.count, keep = Matrix.dropoutConstants(rate).keep
        precondition(kept.count == (count + 7) / 8, "droppedOut(kept:): \(kept.count) mask bytes for \(count) entries")
        var outputs = [Matrix(uninitializedRows: rows, columns: columns)]
        guard count > 0 else { return outputs[0] }
        kept.withUnsafeBufferPointer { k in
            let bits = UnsafeShared(k.baseAddress!)
            Matrix.withBuffers(reading: [self], writing: &outputs) { b in
                compute.forEachChunk(count: (count + 7) / 8, chunkSize: 4_096) { bytes in   // whole bytes, so each worker its own entries
                    recbench_dropout_from_bits(b.read[0], b.write[0], bits.value, bytes.lowerBound * 8, min(count, bytes.upperBound * 8), keep,
                                               kernels == .avx2 ? 1 : 0)
                }
            }
        }
        return outputs[0]
    }
}

/// Dropout that an op applies to its input as it reads it, entry for entry `Matrix.droppedOut`'s
/// mask for the same rate and seed, so the dropped copy is never written (nor kept for the
/// pullback, which draws the mask again).
public struct DropoutMask: Sendable {
    public let rate: Float, seed: UInt64

    public init(rate: Float, seed: UInt64) {
        precondition(rate > 0 && rate < 1, "DropoutMask: rate \(rate) outside (0, 1)")
        self.rate = rate; self.seed = seed
    }

    /// Calls `body` with the factors (0 or 1/(1 − rate)) of entries `entries` of a `count`-entry
    /// matrix, the first entry's first: the mask chunks covering them drawn into scratch (whole
    /// chunks, so a range that starts or ends inside a chunk draws part of it for nothing).
    public func withFactors<R>(entries: Range<Int>, count: Int, kernels: KernelSet = .current, _ body: (UnsafePointer<Float>) -> R) -> R {
        precondition(entries.lowerBound >= 0 && entries.upperBound <= count, "DropoutMask: entries \(entries) outside \(count)")
        let (keep, threshold) = Matrix.dropoutConstants(rate), chunk = Int(RECBENCH_MASK_CHUNK)
        let first = entries.lowerBound / chunk, last = max(first + 1, (entries.upperBound + chunk - 1) / chunk)   // chunks first..<last
        return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: (last - first) * chunk) { scratch in
            for c in stride(from: first, to: last, by: 4) {
                recbench_dropout_chunks(scratch.baseAddress! + (c - first) * chunk, count, seed, c, min(4, last - c), threshold, keep,
                                        kernels == .avx2 ? 1 : 0)
            }
            let factors = UnsafeRawPointer(scratch.baseAddress! + (entries.lowerBound - first * chunk)).assumingMemoryBound(to: Float.self)
            return body(factors)
        }
    }
}
