import Testing
import RecBenchCore

/// Against SciPy 1.17 (`ttest_rel`, `wilcoxon(..., method='approx', correction=False)`),
/// an independent implementation, on fixed vectors.
struct SignificanceTests {
    let a: [Double] = [0.5, 0.2, 0.9, 0.0, 0.33, 0.7, 0.1, 0.6, 0.45, 0.8, 0.25, 0.0]
    let b: [Double] = [0.4, 0.25, 0.6, 0.0, 0.30, 0.5, 0.2, 0.6, 0.35, 0.55, 0.05, 0.1]

    @Test func pairedTTestMatchesSciPy() {
        let r = Significance.pairedTTest(a, b)
        #expect(abs(r.statistic - 1.9722408170160617) < 1e-12)
        #expect(abs(r.p - 0.07424711693786255) < 1e-10)
        #expect(abs(r.effect - 0.5693368833054954) < 1e-12)
        #expect(r.n == 12)
    }

    @Test func wilcoxonMatchesSciPy() {
        let r = Significance.wilcoxon(a, b)
        #expect(r.statistic == 11)
        #expect(abs(r.p - 0.09238885661268335) < 1e-10)
        #expect(r.n == 10)   // two zero differences dropped
    }

    @Test func identicalModelsAreNotDifferent() {
        #expect(Significance.pairedTTest(a, a).p == 1)
        #expect(Significance.wilcoxon(a, a).p == 1)
    }

    @Test func tTestTailMatchesKnownQuantiles() {
        // t = 2.228 with 10 df is the two-sided 5 % point; with 1 df, t = 12.706.
        func p(_ t: Double, df: Int) -> Double {
            // d = t/√n + e, with e = (c, −c, 0, …) of mean 0 and sd 1, has statistic exactly t.
            let n = df + 1
            let c = (Double(n - 1) / 2).squareRoot()
            var d = [Double](repeating: t / Double(n).squareRoot(), count: n)
            d[0] += c; d[1] -= c
            let r = Significance.pairedTTest(d, [Double](repeating: 0, count: n))
            #expect(abs(r.statistic - t) < 1e-9)
            return r.p
        }
        #expect(abs(p(2.228138851986274, df: 10) - 0.05) < 1e-9)
        #expect(abs(p(12.706204736174698, df: 1) - 0.05) < 1e-9)
    }

    @Test func holmAndBonferroniAdjustments() {
        let p = [0.01, 0.04, 0.03, 0.20]
        #expect(zip(Significance.adjust(p, by: .holm), [0.04, 0.09, 0.09, 0.2]).allSatisfy { abs($0 - $1) < 1e-12 })
        #expect(zip(Significance.adjust(p, by: .bonferroni), [0.04, 0.16, 0.12, 0.8]).allSatisfy { abs($0 - $1) < 1e-12 })
    }
}
