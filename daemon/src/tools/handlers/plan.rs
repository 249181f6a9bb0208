//! `update_plan` {plan: [{step, status}], explanation?}: the task's plan, whole each time,
//! at most one step `in_progress`. Control: it changes the task itself.

use futures_util::future::BoxFuture;
use lazyboy_protocol::{EventBody, PlanStep, StepStatus};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{parse, schema};
use crate::tools::{Effect, Handled, ToolContext, ToolHandler, ToolOutcome, ToolOutput, respond};

pub const NAME: &str = "update_plan";

pub struct UpdatePlan;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    plan: Vec<PlanStep>,
    #[serde(default)]
    explanation: Option<String>,
}

impl ToolHandler for UpdatePlan {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Record your plan for a task with several steps. Send the whole plan each time; mark \
         at most one step in_progress. Skip it for simple questions."
    }

    fn parameters(&self) -> Value {
        schema(
            json!({
                "plan": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                    },
                    "required": ["step", "status"],
                    "additionalProperties": false
                }},
                "explanation": {"type": "string", "description": "Why the plan changed."}
            }),
            &["plan"],
        )
    }

    fn effect(&self, _args: &Value) -> Effect {
        Effect::Control
    }

    fn handle<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let args: Args = parse(self, args)?;
            check_plan(&args.plan).map_err(respond)?;
            ctx.scope
                .record(EventBody::PlanUpdated {
                    steps: args.plan,
                    explanation: args.explanation,
                })
                .await?;
            Ok(Handled::Output(ToolOutput::ok("plan updated")))
        })
    }
}

/// Checks a new plan: at most one step in progress, no empty steps.
pub fn check_plan(plan: &[PlanStep]) -> Result<(), String> {
    if let Some(empty) = plan.iter().position(|s| s.step.trim().is_empty()) {
        return Err(format!("plan step {} has no text", empty + 1));
    }
    let in_progress = plan
        .iter()
        .filter(|s| s.status == StepStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(format!(
            "{in_progress} steps are in_progress; at most one may be. Mark the others pending \
             or completed."
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tools::testing::{FakeScope, call, ctx_with};

    fn step(text: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            step: text.into(),
            status,
        }
    }

    #[test]
    fn at_most_one_step_in_progress() {
        use StepStatus::*;
        assert!(check_plan(&[step("a", InProgress), step("b", Pending)]).is_ok());
        let error = check_plan(&[step("a", InProgress), step("b", InProgress)]).unwrap_err();
        assert!(error.contains("2 steps are in_progress"));
        assert!(check_plan(&[step(" ", Pending)]).is_err());
    }

    #[tokio::test]
    async fn a_plan_is_recorded_and_a_bad_one_is_not() {
        let scope = Arc::new(FakeScope::default());
        let (_dir, ctx) = ctx_with(scope.clone());
        let two = json!({"plan": [
            {"step": "a", "status": "in_progress"},
            {"step": "b", "status": "in_progress"}
        ]});
        let out = call(&UpdatePlan, &ctx, two).await;
        assert!(
            out.is_error && out.text.contains("at most one"),
            "{}",
            out.text
        );
        assert!(scope.recorded().is_empty());
        let one = json!({"plan": [{"step": "a", "status": "in_progress"}]});
        assert!(!call(&UpdatePlan, &ctx, one).await.is_error);
        assert!(matches!(
            &scope.recorded()[..],
            [EventBody::PlanUpdated { steps, .. }] if steps.len() == 1
        ));
    }
}
