/// The copies a causal 1-D convolution over time is made of (im2col and its adjoint): the
/// product itself is one GEMM over every step of every sequence.
public enum ConvolutionKernels {
    /// Each of `x`'s rows (sequences of `steps` consecutive rows, C wide) beside the rows
    /// `shifts[k]` steps before it (zeros before the sequence starts): rows × (taps · C),
    /// tap k in columns k·C..<(k + 1)·C.
    public static func taps(_ x: Matrix, steps: Int, shifts: [Int], compute: Compute) -> Matrix {
        let c = x.columns, width = shifts.count * c, sequences = steps == 0 ? 0 : x.rows / steps
        var outputs = [Matrix(rows: x.rows, columns: width)]
        guard x.rows > 0 && c > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [x], writing: &outputs) { p in
            compute.forEachChunk(count: sequences, chunkSize: max(1, 4096 / max(1, steps * width))) { range in
                for s in range {
                    for (k, shift) in shifts.enumerated() where shift < steps {
                        for t in shift..<steps {
                            (p.write[0] + (s * steps + t) * width + k * c).update(from: p.read[0] + (s * steps + t - shift) * c, count: c)
                        }
                    }
                }
            }
        }
        return outputs[0]
    }

    /// The adjoint of `taps`: each tap's columns added back `shifts[k]` steps earlier (rows × C).
    public static func addTaps(_ g: Matrix, steps: Int, shifts: [Int], into x: inout Matrix, compute: Compute) {
        let c = x.columns, width = g.columns, sequences = steps == 0 ? 0 : x.rows / steps
        precondition(width == shifts.count * c && g.rows == x.rows, "addTaps: shapes do not match")
        guard x.rows > 0 && c > 0 else { return }
        var outputs = [x]
        x = Matrix(rows: 0, columns: c)   // no copy on write
        Matrix.withBuffers(reading: [g], writing: &outputs) { p in
            compute.forEachChunk(count: sequences, chunkSize: max(1, 4096 / max(1, steps * width))) { range in
                for s in range {
                    for (k, shift) in shifts.enumerated() where shift < steps {
                        for t in shift..<steps {
                            let to = p.write[0] + (s * steps + t - shift) * c, from = p.read[0] + (s * steps + t) * width + k * c
                            for j in 0..<c { to[j] += from[j] }
                        }
                    }
                }
            }
        }
        x = outputs[0]
    }
}
