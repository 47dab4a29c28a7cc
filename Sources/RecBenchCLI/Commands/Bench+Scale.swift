import Foundation
import Linalg
import Logging
import RecBenchCore
import RecBenchBench

/// The scale benchmark (issue 17): a generated log of a named shape, EASE, ItemKNN and Pop
/// on it as whole processes, every phase beside its roofline at this host's peaks.
extension Bench {
    /// Whole-process bound and peak-RSS bound the issue sets, and the smaller population
    /// evaluation's memory is compared with.
    static let scaleWallBound = 300.0, scaleMemoryBound = 8e9, scaleProbeUsers = 20_000

    func scaleRows(_ shapeName: String, reference: BenchmarkReference, logger: Logger) throws -> [BenchmarkRow] {
        logger.notice("measuring this host's sgemm peak, copy bandwidth and Cholesky-inverse rate")
        let peaks = try HostPeaks.measure(compute: .allCores)
        var rows = peakRows(peaks, reference: reference)
        let folder = scaleDir ?? NSTemporaryDirectory() + "recbench-scale-\(getpid())"
        defer { if scaleDir == nil { try? FileManager.default.removeItem(atPath: folder) } }
        let dataset = "\(shapeName)-synthetic", shape = ScaleSample.Shape.named[shapeName]!
        let path = "\(folder)/\(dataset)/\(dataset).inter"
        logger.notice("writing \(path)")
        let start = ContinuousClock.now
        let written = try ScaleSample(shape: shape).write(to: path)
        let sampleSeconds = (ContinuousClock.now - start).seconds
        let fileBytes = Double((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        rows.append(BenchmarkRow(step: "sample --shape \(shapeName): \(written) rows, \(shape.users) users × \(shape.items) items, "
                                       + "\(megabytes(fileBytes)) (\(rate(Double(written), sampleSeconds)) rows/s)",
                                 seconds: sampleSeconds, reference: "the file written once at the copy bandwidth (this run)",
                                 referenceSeconds: fileBytes / peaks.bandwidth, target: nil))
        let assignments = ["data_path=\(folder)", "dataset=\(dataset)", "load_col={inter: [user_id, item_id, timestamp]}"]
        logger.notice("in-process probe: work counts, and evaluation's peak memory at \(Self.scaleProbeUsers) users and at all")
        let probe = try ScaleProbe.measure(plan: Experiment.plan(RunRequest(model: "Pop", configFiles: [config], assignments: assignments)),
                                           probeUsers: Self.scaleProbeUsers, logger: logger)
        for model in ["EASE", "ItemKNN", "Pop"] {
            logger.notice("\(model): recbench run on \(dataset)")
            let (seconds, peak, result) = try bestRun(model, assignments, learned: false, runs: 1)
            rows += processRows(model, seconds: seconds, peak: peak, result: result)
            if model == "EASE" { rows += dataRows(result, fileBytes: fileBytes, peaks: peaks) }
            rows += fitRows(model, result: result, probe: probe, peaks: peaks)
            rows += evaluationRows(model, result: result, probe: probe, peaks: peaks)
            if model == "EASE" { rows.append(largestCatalogueRow(easePeakMiB: peak, items: result.statistics.items, peaks: peaks)) }
        }
        return rows + memoryRows(probe, items: shape.items)
    }

    /// This run's peaks beside BLAS-NOTES' (the reference file's copy of them).
    func peakRows(_ peaks: HostPeaks, reference: BenchmarkReference) -> [BenchmarkRow] {
        [BenchmarkRow(step: "host: sgemm peak \(String(format: "%.0f", peaks.sgemm / 1e9)) GFLOP/s (2048³, best of 3); seconds for 1 TFLOP",
                      seconds: 1e12 / peaks.sgemm, reference: "BLAS-NOTES' \(Int(reference.sgemmPeak / 1e9)) GFLOP/s",
                      referenceSeconds: 1e12 / reference.sgemmPeak, target: nil),
         BenchmarkRow(step: "host: copy bandwidth \(String(format: "%.1f", peaks.bandwidth / 1e9)) GB/s (256 MiB, read + write); seconds for 100 GB",
                      seconds: 1e11 / peaks.bandwidth, reference: "BLAS-NOTES' \(reference.copyBandwidth.map { String(format: "%.0f", $0 / 1e9) } ?? "?") GB/s",
                      referenceSeconds: reference.copyBandwidth.map { 1e11 / $0 } ?? .nan, target: nil),
         BenchmarkRow(step: "host: spotrf + spotri at n = 4096, as n³ / \(String(format: "%.0f", peaks.choleskyInverse / 1e9))e9 s; seconds for n = 20,000",
                      seconds: pow(2e4, 3) / peaks.choleskyInverse, reference: "BLAS-NOTES' n³ / \(Int(reference.choleskyInverseRate / 1e9))e9",
                      referenceSeconds: pow(2e4, 3) / reference.choleskyInverseRate, target: nil)]
    }

    /// The whole process against the issue's 5-minute bound, and its peak RSS against 8 GB.
    func processRows(_ model: String, seconds: Double, peak: Double, result: RunResult) -> [BenchmarkRow] {
        [BenchmarkRow(step: "\(model): whole process (load, split, fit, valid + test over every user), "
                            + "test ndcg@10 \(String(format: "%.4f", result.test["ndcg@10"] ?? 0))",
                      seconds: seconds, reference: "5 minutes", referenceSeconds: Self.scaleWallBound, target: 1),
         BenchmarkRow(step: "  \(model) peak RSS, MiB", seconds: peak, reference: "8 GB, MiB", referenceSeconds: Self.scaleMemoryBound / 1_048_576, target: 1)]
    }

    /// Load and split against moving their bytes once at the copy bandwidth.
    func dataRows(_ result: RunResult, fileBytes: Double, peaks: HostPeaks) -> [BenchmarkRow] {
        let rows = Double(result.statistics.interactions), load = result.seconds["load"] ?? .nan
        return [BenchmarkRow(step: "  load: parse, intern ids, filter, dedup (\(rate(rows, load)) rows/s, \(megabytes(fileBytes / load))/s)", seconds: load,
                             reference: "the file read once at the copy bandwidth", referenceSeconds: fileBytes / peaks.bandwidth, target: nil),
                BenchmarkRow(step: "  split: group by user, order by time, cut 0.8/0.1/0.1", seconds: result.seconds["split"] ?? .nan,
                             reference: "16 B per row (user, item, time) read and written once", referenceSeconds: rows * 32 / peaks.bandwidth, target: nil)]
    }

    /// Each fit step beside its roofline: Gram by its multiply-adds at the sgemm peak (or its
    /// output written once, when that is longer), the inverse at this run's Cholesky rate,
    /// the scaling as n² floats read and written.
    func fitRows(_ model: String, result: RunResult, probe: ScaleProbe, peaks: HostPeaks) -> [BenchmarkRow] {
        let n = Double(result.statistics.items), fit = result.seconds["fit"] ?? .nan
        func gramRoofline(_ multiplyAdds: Double) -> Double { max(2 * multiplyAdds / peaks.sgemm, 4 * n * n / peaks.bandwidth) }
        switch model {
        case "EASE":
            return [BenchmarkRow(step: "  EASE gram: upper triangle of XᵀX from sparse X, "
                                       + "\(giga(probe.upperGramMultiplyAdds)) multiply-adds (sparse scatter)",
                                 seconds: result.fitSteps["gram"] ?? .nan, reference: "2 FLOP each at the sgemm peak, or n² floats written",
                                 referenceSeconds: gramRoofline(probe.upperGramMultiplyAdds), target: nil),
                    BenchmarkRow(step: "  EASE inverse: spotrf + spotri, n = \(Int(n))", seconds: result.fitSteps["inverse"] ?? .nan,
                                 reference: "n³ at this run's Cholesky rate (n = 4096)", referenceSeconds: pow(n, 3) / peaks.choleskyInverse, target: nil),
                    BenchmarkRow(step: "  EASE scale: B = −P / diag(P)", seconds: result.fitSteps["scale"] ?? .nan,
                                 reference: "n² floats read and written", referenceSeconds: 8 * n * n / peaks.bandwidth, target: nil)]
        case "ItemKNN":
            return [BenchmarkRow(step: "  ItemKNN fit: XᵀX row by row (\(giga(probe.gramMultiplyAdds)) multiply-adds), cosine, top k per item",
                                 seconds: fit, reference: "the Gram's 2 FLOP each at the sgemm peak, or n² floats written",
                                 referenceSeconds: gramRoofline(probe.gramMultiplyAdds), target: nil)]
        default:
            return [BenchmarkRow(step: "  \(model) fit", seconds: fit, reference: "–", referenceSeconds: .nan, target: nil)]
        }
    }

    /// Each evaluation pass beside its roofline: the scores' FLOPs at the sgemm peak (EASE:
    /// x_u · B, 2·n per train pair; ItemKNN: 2·k per pair) or the score block written and
    /// read once, whichever is longer.
    func evaluationRows(_ model: String, result: RunResult, probe: ScaleProbe, peaks: HostPeaks) -> [BenchmarkRow] {
        let n = Double(result.statistics.items)
        let perPair: Double = model == "EASE" ? 2 * n : model == "ItemKNN" ? 2 * (result.hyperparameters["k"]?.doubleValue ?? 100) : 0
        return [("valid", result.split.validUsers), ("test", result.split.testUsers)].map { part, users in
            let flops = perPair * Double(probe.trainPairs) * Double(users) / Double(max(1, result.statistics.users))
            let bytes = 8 * Double(users) * n
            return BenchmarkRow(step: "  \(model) evaluate \(part): \(users) users × \(Int(n)) items scored, masked, top-K'd in blocks of \(probe.blockUsers)",
                                seconds: result.seconds["evaluate_\(part)"] ?? .nan,
                                reference: flops > 0 ? "\(giga(flops)) FLOP at the sgemm peak, or the scores written and read"
                                                     : "the scores written and read once",
                                referenceSeconds: max(flops / peaks.sgemm, bytes / peaks.bandwidth), target: nil)
        }
    }

    /// The largest catalogue EASE can take here: the dense n² matrix plus what the ml-20m
    /// run held besides it must fit in this machine's memory, and n ≤ 46,340 (LAPACK's
    /// 32-bit indices); its inverse projected at this run's Cholesky rate.
    func largestCatalogueRow(easePeakMiB: Double, items: Int, peaks: HostPeaks) -> BenchmarkRow {
        let memory = ProcessStats.availableMemoryBytes
        let besides = max(0, easePeakMiB * 1_048_576 - 4 * Double(items) * Double(items))
        let byMemory = Int(((memory - besides) / 4).squareRoot())
        let largest = min(byMemory, BLAS.maxSquareOrder)
        let bound = largest == BLAS.maxSquareOrder
            ? "OpenBLAS's 32-bit indices (n² < 2³¹); memory alone would allow \(byMemory)"
            : "memory; 32-bit LAPACK would allow \(BLAS.maxSquareOrder)"
        return BenchmarkRow(step: "largest EASE catalogue in \(String(format: "%.1f", memory / 1_073_741_824)) GiB: \(largest) items, bound by \(bound) "
                                  + "(\(megabytes(4 * Double(largest) * Double(largest))) matrix + \(megabytes(besides)) besides); "
                                  + "seconds: its inverse, projected",
                            seconds: pow(Double(largest), 3) / peaks.choleskyInverse, reference: "–", referenceSeconds: .nan, target: nil)
    }

    /// Evaluation's peak above resident memory at every user against at the first 20,000:
    /// bounded memory means the same peak (± 10 %) at the same batch budget.
    func memoryRows(_ probe: ScaleProbe, items: Int) -> [BenchmarkRow] {
        guard let all = probe.evaluationPeakMiB, let few = probe.probeEvaluationPeakMiB else {
            return [BenchmarkRow(step: "evaluation memory: the peak cannot be reset on this system (/proc/self/clear_refs)", seconds: .nan,
                                 reference: "–", referenceSeconds: .nan, target: nil)]
        }
        let block = 4 * Double(probe.blockUsers) * Double(items) / 1_048_576
        return [BenchmarkRow(step: "evaluation's peak above resident, MiB: \(probe.users) users "
                                   + "(Pop, valid; a block of scores is \(String(format: "%.0f", block)) MiB)",
                             seconds: all, reference: "the same at the first \(probe.probeUsers) users", referenceSeconds: few, target: 1.1)]
    }

    func rate(_ count: Double, _ seconds: Double) -> String { String(format: "%.1f M", count / seconds / 1e6) }
    func giga(_ count: Double) -> String { String(format: "%.1f G", count / 1e9) }
    func megabytes(_ bytes: Double) -> String { bytes < 1e9 ? String(format: "%.0f MB", bytes / 1e6) : String(format: "%.2f GB", bytes / 1e9) }
}
