import ArgumentParser
import Testing
import RecBenchCLI

/// Command-line parsing, in process (swift-argument-parser's `parseAsRoot`): what each
/// command accepts and rejects before anything runs.
struct ParsingTests {
    @Test func runTakesRepeatedConfigsAndSetsInOrder() throws {
        let command = try Recbench.parseAsRoot(["run", "--model", "EASE", "-c", "a.yml", "--config", "b.yml",
                                                "--set", "topk=[10,20]", "-s", "seed=3", "--dataset", "mart", "--json"])
        let run = try #require(command as? Run)
        #expect(run.model == "EASE")
        #expect(run.experiment.config == ["a.yml", "b.yml"])
        #expect(run.experiment.assignments == ["topk=[10,20]", "seed=3"])
        #expect(run.experiment.dataset == "mart")
        #expect(run.json && !run.noSave)
    }

    @Test func sweepParsesModelsJobsAndGrids() throws {
        let sweep = try #require(try Recbench.parseAsRoot(["sweep", "--config", "c.yml", "--models", "Pop,EASE", "--jobs", "2",
                                                           "--set", "reg_weight=100,250"]) as? Sweep)
        #expect(sweep.models == "Pop,EASE")
        #expect(sweep.jobs == 2)
        #expect(sweep.experiment.assignments == ["reg_weight=100,250"])
    }

    @Test func reportFormatsAreAClosedSet() throws {
        let report = try #require(try Recbench.parseAsRoot(["report", "out", "--format", "latex", "--k", "20"]) as? ReportCommand)
        #expect(report.directory == "out" && report.format == .latex && report.k == 20)
        #expect(throws: (any Error).self) { try Recbench.parseAsRoot(["report", "--format", "docx"]) }
    }

    @Test func unknownOptionsAndCommandsAreRejected() {
        #expect(throws: (any Error).self) { try Recbench.parseAsRoot(["run", "--modle", "EASE"]) }
        #expect(throws: (any Error).self) { try Recbench.parseAsRoot(["fit", "--model", "EASE"]) }
        #expect(throws: (any Error).self) { try Recbench.parseAsRoot(["sweep", "--jobs", "two"]) }
    }

    @Test func modelsWriteNeedsDefaults() throws {
        #expect(throws: (any Error).self) { try Recbench.parseAsRoot(["models", "--write", "out"]) }
        let models = try #require(try Recbench.parseAsRoot(["models", "--defaults", "--write", "out"]) as? Models)
        #expect(models.defaults && models.write == "out")
    }

    @Test func everyCommandHasHelp() {
        for command in [Run.self, Sweep.self, ReportCommand.self, Convert.self, Sample.self, Models.self, Bench.self] as [any ParsableCommand.Type] {
            let help = Recbench.helpMessage(for: command)
            #expect(help.contains("USAGE:") && help.contains("--help"), "\(command)")
        }
    }
}
