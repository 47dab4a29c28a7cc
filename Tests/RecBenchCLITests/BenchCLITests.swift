import Foundation
import Testing

/// `recbench bench`'s parts that run without ../shared: `--scale` end to end on the smallest
/// shape (every phase of every model beside a roofline, the bounds checked, the log kept
/// where asked), and `--recbole`'s refusal when RecBole's runner is not configured.
struct BenchCLITests {
    struct Row: Decodable { let step: String; let seconds: Double; let referenceSeconds: Double?; let target: Double? }

    @Test func theScaleBenchReportsEveryPhaseBesideItsRoofline() throws {
        let w = try Workspace()
        let repo = SeedPaths.repo
        let out = try w.run(["bench", "--scale", "ml-100k", "--scale-dir", w.root + "/scale", "--json", "--quiet",
                             "--config", repo + "/Configs/ml-100k.yml", "--reference", repo + "/Configs/bench/recbole-1.2.1.yml"])
        #expect(out.status == 0, "\(out.stderr)")
        // NaN (no comparison) is encoded as the string "nan": decode it as nil.
        let text = out.stdout.replacingOccurrences(of: "\"nan\"", with: "null")
        let rows = try JSONDecoder().decode([Row].self, from: Data(text.utf8))
        func row(_ prefix: String) -> Row? { rows.first { $0.step.trimmingCharacters(in: .whitespaces).hasPrefix(prefix) } }
        for model in ["EASE", "ItemKNN", "Pop"] {
            let whole = try #require(row("\(model): whole process"))
            #expect(whole.seconds > 0 && whole.target == 1 && whole.referenceSeconds == 300)
            let rss = try #require(row("\(model) peak RSS"))
            #expect(rss.seconds > 1 && rss.seconds < 2_000, "a child's own peak, not the benchmark's: \(rss.seconds) MiB")
            for part in ["valid", "test"] {
                let evaluation = try #require(row("\(model) evaluate \(part): 943 users × 1682 items"))
                #expect(evaluation.seconds > 0 && (evaluation.referenceSeconds ?? 0) > 0)
            }
        }
        for step in ["EASE gram", "EASE inverse: spotrf + spotri, n = 1682", "EASE scale", "load:", "split:", "ItemKNN fit"] {
            let r = try #require(row(step), "no row for \(step)")
            #expect(r.seconds > 0 && (r.referenceSeconds ?? 0) > 0, "\(step)")
        }
        #expect(row("largest EASE catalogue") != nil)
        let memory = try #require(row("evaluation's peak above resident"))
        if let few = memory.referenceSeconds {   // nil where the peak cannot be reset
            #expect(memory.seconds > 0 && abs(memory.seconds / few - 1) <= 0.1)
        }
        let kept = try String(contentsOfFile: w.root + "/scale/ml-100k-synthetic/ml-100k-synthetic.inter", encoding: .utf8)
        #expect(kept.split(separator: "\n").count == 100_001)
    }

    @Test func anUnknownShapeIsRefusedBeforeAnyWork() throws {
        let w = try Workspace()
        let out = try w.run(["bench", "--scale", "ml-2m"])
        #expect(out.status != 0)
        #expect(out.stderr.contains("unknown --scale shape 'ml-2m'") && out.stderr.contains("ml-20m"))
    }

    @Test func recboleWithoutItsRunnerIsOneLineNamingTheKeys() throws {
        let w = try Workspace()
        let reference = w.root + "/ref.yml"
        try "sgemm_peak_gflops: 245\ncholesky_inverse_gflops: 230\nmodels: {BPR: {wall: 11.6}}\n".write(toFile: reference, atomically: true, encoding: .utf8)
        let out = try w.run(["bench", "--recbole", "/usr/bin/python3", "--reference", reference, "--no-ease", "--no-item2vec", "--no-context", "--no-classics"])
        #expect(out.status != 0)
        #expect(out.stderr.split(separator: "\n").count == 1, "\(out.stderr)")
        #expect(out.stderr.contains("ref.yml") && out.stderr.contains("recbole_runner") && out.stderr.contains("recbole_data"))
    }
}
