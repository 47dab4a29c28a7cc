import CLanes

/// Eight float lanes: the width of the elementwise kernels. The build targets baseline
/// x86-64, so this is two SSE registers; the point is that the maths (exp above all) runs
/// on vectors instead of one libm call per element.
public typealias Lanes = SIMD8<Float>

extension Lanes {
    /// eˣ per lane, within 2 ulp of the correctly rounded value for normal results (Cephes'
    /// expf: x = n·ln 2 + r with |r| ≤ ln 2 / 2, a degree-6 polynomial for eʳ, then 2ⁿ from
    /// the exponent bits). Underflows to 0 below −87.3 (no subnormals), overflows to +∞ above
    /// 88.7, and keeps NaN.
    @inlinable @inline(__always)
    public static func exp(_ x: Lanes) -> Lanes {
        let low: Float = -87.336_544, high: Float = 88.722_84
        var result = expInRange(x.clamped(low, high))
        result.replace(with: 0, where: x .< low)
        result.replace(with: .infinity, where: x .> high)
        result.replace(with: x, where: x .!= x)
        return result
    }

    /// eˣ for x ≤ 0 (a softmax after subtracting the row maximum): `exp` without the
    /// overflow and NaN handling it cannot need; underflows to 0 below −87.3, NaN stays NaN.
    @inlinable @inline(__always)
    public static func expNonPositive(_ x: Lanes) -> Lanes {
        let low: Float = -87.336_544
        return expInRange(x.replacing(with: low, where: x .< low)).replacing(with: 0, where: x .< low)
    }

    /// eˣ for lanes already within −87.3…88.7 (`exp` without its range handling, for callers
    /// that bound x themselves); NaN in, NaN out.
    @inlinable @inline(__always)
    static func expInRange(_ x: Lanes) -> Lanes {
        // Round x·log2(e) to the nearest integer by adding 1.5·2²³: the integer lands in the
        // low mantissa bits (SSE2 has no vector round instruction).
        let magic: Float = 12_582_912
        let shifted = x * 1.442_695_04 + magic
        let n = shifted - magic
        let r = x - n * 0.693_359_375 + n * 2.121_944_4e-4
        var p = Lanes(repeating: 1.987_569_15e-4)
        p = p * r + 1.398_199_95e-3
        p = p * r + 8.333_451_9e-3
        p = p * r + 4.166_579_59e-2
        p = p * r + 1.666_666_55e-1
        p = p * r + 5.000_000_12e-1
        p = p * (r * r) + r + 1
        // 2ⁿ from the integer in the low bits of `shifted`, as 2^⌊n/2⌋ · 2^⌈n/2⌉ so that n = 128
        // (x just below the overflow bound) does not overflow the exponent field.
        let whole = unsafeBitCast(shifted, to: SIMD8<Int32>.self) &- Int32(bitPattern: magic.bitPattern)
        let half = whole &>> 1
        return p * unsafeBitCast((half &+ 127) &<< 23, to: Lanes.self) * unsafeBitCast((whole &- half &+ 127) &<< 23, to: Lanes.self)
    }

    /// tanh per lane as 1 − 2/(e^{2x} + 1), saturating to ±1 beyond |x| = 15 (float's
    /// tanh is exactly ±1 there).
    @inlinable @inline(__always)
    public static func tanh(_ x: Lanes) -> Lanes {
        // |2x| ≤ 30 is inside exp's range, and NaN passes through the arithmetic.
        1 - 2 / (expInRange(2 * x.clamped(-15, 15)) + 1)
    }

    /// erf per lane, within 1.5·10⁻⁷ absolute (Abramowitz & Stegun 7.1.26:
    /// 1 − (a₁t + … + a₅t⁵) e^{−x²} with t = 1 / (1 + p|x|), odd in x).
    @inlinable @inline(__always)
    public static func erf(_ x: Lanes) -> Lanes {
        let a = x.replacing(with: -x, where: x .< 0)
        let t = 1 / (1 + 0.327_591_1 * a)
        let poly = t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))))
        let y = 1 - poly * expNonPositive(-(a * a))
        return y.replacing(with: -y, where: x .< 0)
    }

    /// GELU per lane, the exact form x · Φ(x) = x · ½ (1 + erf(x / √2)).
    @inlinable @inline(__always)
    public static func gelu(_ x: Lanes) -> Lanes { 0.5 * x * (1 + erf(x * 0.707_106_781_186_547_5)) }

    /// GELU's derivative per lane: Φ(x) + x φ(x).
    @inlinable @inline(__always)
    public static func geluSlope(_ x: Lanes) -> Lanes {
        0.5 * (1 + erf(x * 0.707_106_781_186_547_5)) + x * 0.398_942_280_401_432_7 * expNonPositive(-0.5 * x * x)
    }

    /// The natural logarithm per lane for x ≥ the smallest normal float (a log-sum-exp's
    /// sum, at least 1), within 2 ulp of the correctly rounded value (Cephes' logf:
    /// x = m·2ᵉ with m in [√½, √2), a degree-8 polynomial for log(m), then e·ln 2 in two
    /// parts). +∞ and NaN are kept; zero, negatives and subnormals are outside its domain.
    @inlinable @inline(__always)
    public static func log(_ x: Lanes) -> Lanes {
        let bits = unsafeBitCast(x, to: SIMD8<Int32>.self)
        // m in [0.5, 1) from the mantissa, e the unbiased exponent plus one.
        var e = Lanes((bits &>> 23) &- 126)
        var m = unsafeBitCast((bits & 0x007F_FFFF) | 0x3F00_0000, to: Lanes.self)
        let small = m .< 0.707_106_77
        e.replace(with: e - 1, where: small)
        m = m.replacing(with: m + m, where: small) - 1
        let z = m * m
        var p = Lanes(repeating: 7.037_683_6e-2)
        p = p * m - 1.151_461_0e-1
        p = p * m + 1.167_699_9e-1
        p = p * m - 1.242_014_1e-1
        p = p * m + 1.424_932_3e-1
        p = p * m - 1.666_805_8e-1
        p = p * m + 2.000_071_5e-1
        p = p * m - 2.499_999_4e-1
        p = p * m + 3.333_333_1e-1
        var y = p * m * z + e * -2.121_944_4e-4 - 0.5 * z
        y = m + y + e * 0.693_359_375
        y.replace(with: x, where: (x .!= x) .| (x .== .infinity))
        return y
    }

    /// The logistic function 1/(1 + e^{−x}) per lane. −x is held inside exp's range, so
    /// below x = −88.7 the result is 1/(1 + e^{88.7}) ≈ 3·10⁻³⁹ rather than the exact
    /// subnormal (both round to 0 in any sum with a normal number); NaN stays NaN.
    @inlinable @inline(__always)
    public static func sigmoid(_ x: Lanes) -> Lanes { 1 / (1 + expInRange((-x).clamped(-87.336_544, 88.722_84))) }

    /// The square root of each lane (`squareRoot()` on SIMD types takes eight scalar roots).
    @inlinable @inline(__always)
    public static func squareRoot(_ x: Lanes) -> Lanes { recbench_sqrt8(x) }

    /// max(x, 0) per lane, in one vector instruction.
    @inlinable @inline(__always)
    public static func relu(_ x: Lanes) -> Lanes { recbench_relu8(x) }

    /// g where y > 0, else 0: ReLU's pullback given its output y.
    @inlinable @inline(__always)
    public static func reluGradient(_ g: Lanes, output y: Lanes) -> Lanes { recbench_relu_gradient8(g, y) }

    /// Each lane limited to `low...high` (NaN stays NaN). Written as compare-and-select:
    /// the standard library's generic `clamped` is an out-of-line call per vector.
    @inlinable @inline(__always)
    public func clamped(_ low: Float, _ high: Float) -> Lanes {
        replacing(with: low, where: self .< low).replacing(with: high, where: self .> high)
    }

    /// The larger of each pair of lanes.
    @inlinable @inline(__always)
    public static func maximum(_ a: Lanes, _ b: Lanes) -> Lanes { a.replacing(with: b, where: b .> a) }

    /// Lanes `i ..< i + 8` of `p`; lanes past `count` (the tail of a buffer) are `padding`.
    @inlinable @inline(__always)
    public static func load(_ p: UnsafePointer<Float>, _ i: Int, count: Int, padding: Float = 0) -> Lanes {
        if i + 8 <= count { return UnsafeRawPointer(p + i).loadUnaligned(as: Lanes.self) }
        var v = Lanes(repeating: padding)
        for l in 0..<(count - i) { v[l] = p[i + l] }
        return v
    }

    /// Stores the lanes to `p[i ..< min(i + 8, count)]`.
    @inlinable @inline(__always)
    public func store(_ p: UnsafeMutablePointer<Float>, _ i: Int, count: Int) {
        if i + 8 <= count { UnsafeMutableRawPointer(p + i).storeBytes(of: self, as: Lanes.self); return }
        for l in 0..<(count - i) { p[i + l] = self[l] }
    }

    /// The sum of the lanes, added in a fixed order.
    @inlinable @inline(__always)
    public var total: Float {
        let half = lowHalf + highHalf
        return (half[0] + half[2]) + (half[1] + half[3])
    }

    /// Σ a[j]·b[j] over `n` floats: eight partial sums, then their `total` (a fixed order without a
    /// chain of n dependent adds).
    @inlinable @inline(__always)
    public static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count n: Int) -> Float {
        var sum = Lanes()
        for j in stride(from: 0, to: n, by: 8) { sum += Lanes.load(a, j, count: n) * Lanes.load(b, j, count: n) }
        return sum.total
    }
}

/// Elementwise kernels over buffers, eight lanes at a time, in parallel chunks whose
/// boundaries are multiples of 8 (so only the buffer's end is a partial vector).
public enum LaneKernels {
    /// Elements per parallel chunk (fixed, so results never depend on the number of cores).
    public static let chunk = 1 << 15

    /// out[i] = f(a[i]).
    @inlinable @inline(__always)
    public static func map(_ a: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count: Int,
                           compute: Compute, _ f: @Sendable (Lanes) -> Lanes) {
        let p = UnsafeShared((a, out))   // workers write disjoint element ranges
        compute.forEachChunk(count: count, chunkSize: chunk) { range in
            let (x, o) = p.value
            var i = range.lowerBound
            while i < range.upperBound {
                f(Lanes.load(x, i, count: count)).store(o, i, count: count)
                i += 8
            }
        }
    }

    /// out[i] = f(a[i], b[i]).
    @inlinable @inline(__always)
    public static func zipMap(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>,
                              count: Int, compute: Compute, _ f: @Sendable (Lanes, Lanes) -> Lanes) {
        let p = UnsafeShared((a, b, out))   // workers write disjoint element ranges
        compute.forEachChunk(count: count, chunkSize: chunk) { range in
            let (x, y, o) = p.value
            var i = range.lowerBound
            while i < range.upperBound {
                f(Lanes.load(x, i, count: count), Lanes.load(y, i, count: count)).store(o, i, count: count)
                i += 8
            }
        }
    }
}
