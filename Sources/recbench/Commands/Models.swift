import ArgumentParser
import RecBenchCore

struct Models: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the registered models, one line each, with their hyperparameters.")

    @Flag(help: "Also list each model's hyperparameters with defaults.")
    var parameters = false

    func run() {
        let width = ModelRegistry.models.map { $0.name.count }.max() ?? 0
        for model in ModelRegistry.models {
            Terminal.out(model.name.padding(toLength: width + 2, withPad: " ", startingAt: 0)
                         + model.kind.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0) + model.summary)
            if parameters {
                for p in model.parameters {
                    Terminal.out("    \(p.name): \(p.defaultValue)  (\(p.type)) \(p.summary)")
                }
            }
        }
    }
}
