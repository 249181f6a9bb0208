//! One `tools/call`: arguments checked, then the same runtime path the CLI verbs and routes
//! take (`Runtime::create_task`, `answer`, `decide`, `message_agent`, `stop`,
//! `deliverables`), never a second implementation of one.
//!
//! Every user mistake (unknown agent or task, a bad argument, a task not waiting, a bad
//! option) is a [`ToolError`], which the client gets as a tool result with `isError: true`
//! and a text saying what to do; nothing is written before the arguments are checked.

use std::sync::Arc;
use std::time::Duration;

use lazyboy_protocol::mcp_server::{
    MAX_JOB_BYTES, MAX_WAIT_SECS, TeamAgent, TeamAgents, TeamFile, TeamFiles, TeamTask, TeamTold,
    file_uri,
};
use lazyboy_protocol::{AnswerTask, Decision, Task};
use rmcp::model::JsonObject;
use rmcp::service::{RequestContext, RoleServer};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::ToolError;
use super::scope::Scope;
use super::{status, wait};
use crate::agent::{JobError, MessageError, Runtime};
use crate::store::TaskRow;

/// How long `stop_task` waits for a running task to record its end.
const STOP_SETTLE: Duration = Duration::from_secs(10);

/// A successful call: the text a model reads, the structured result, and links to
/// resources (deliverables).
pub struct Done {
    pub text: String,
    pub structured: Value,
    pub links: Vec<TeamFile>,
}

impl Done {
    fn new(text: String, structured: &impl serde::Serialize) -> Done {
        Done {
            text,
            structured: serde_json::to_value(structured).unwrap_or(Value::Null),
            links: Vec::new(),
        }
    }

    fn task(status: &TeamTask) -> Done {
        let mut done = Done::new(status::text(status), status);
        done.links = files_of(status);
        done
    }
}

/// What a call runs with.
pub struct Call<'a> {
    pub runtime: &'a Arc<Runtime>,
    pub scope: Scope,
    pub context: &'a RequestContext<RoleServer>,
    pub shutdown: &'a CancellationToken,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ask {
    agent: String,
    job: String,
    workspace: Option<String>,
    wait_s: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskOnly {
    task: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wait {
    task: String,
    timeout_s: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    task: String,
    text: Option<String>,
    option: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Approve {
    task: String,
    #[serde(default)]
    for_task: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Deny {
    task: String,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tell {
    agent: String,
    text: String,
}

fn parse<T: DeserializeOwned>(tool: &'static str, args: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::BadArguments {
        tool,
        message: e.to_string(),
    })
}

/// A number of seconds in `0..=MAX_WAIT_SECS`.
fn seconds(tool: &'static str, name: &str, value: i64) -> Result<Duration, ToolError> {
    u64::try_from(value)
        .ok()
        .filter(|s| *s <= MAX_WAIT_SECS)
        .map(Duration::from_secs)
        .ok_or_else(|| ToolError::BadArguments {
            tool,
            message: format!("{name} must be between 0 and {MAX_WAIT_SECS} seconds (got {value})"),
        })
}

fn text_size(tool: &'static str, name: &str, text: &str) -> Result<(), ToolError> {
    if text.len() > MAX_JOB_BYTES {
        return Err(ToolError::BadArguments {
            tool,
            message: format!(
                "{name} is {} bytes; the most is {MAX_JOB_BYTES}: put a long brief in a file \
                 in the workspace and name the file instead",
                text.len()
            ),
        });
    }
    Ok(())
}

impl Call<'_> {
    /// Runs the tool `name` (one of `tools::all()`).
    pub async fn run(&self, name: &str, args: JsonObject) -> Result<Done, ToolError> {
        match name {
            "list_agents" => self.list_agents().await,
            "ask_agent" => self.ask(parse("ask_agent", args)?).await,
            "task_status" => {
                let args: TaskOnly = parse("task_status", args)?;
                Ok(Done::task(&self.status(&args.task).await?))
            }
            "wait_task" => {
                let args: Wait = parse("wait_task", args)?;
                let timeout = seconds("wait_task", "timeout_s", args.timeout_s)?;
                let task = self.task(&args.task).await?;
                Ok(Done::task(&self.wait(&task, timeout).await?))
            }
            "answer_task" => self.answer(parse("answer_task", args)?).await,
            "approve_call" => {
                let args: Approve = parse("approve_call", args)?;
                let decision = if args.for_task {
                    Decision::ApproveForTask
                } else {
                    Decision::Approve
                };
                self.decide(&args.task, decision, None).await
            }
            "deny_call" => {
                let args: Deny = parse("deny_call", args)?;
                self.decide(&args.task, Decision::Deny, args.reason).await
            }
            "tell_agent" => self.tell(parse("tell_agent", args)?).await,
            "stop_task" => {
                let args: TaskOnly = parse("stop_task", args)?;
                let task = self.task(&args.task).await?;
                self.runtime.stop(&task.id).await?;
                // A running loop records `cancelled` a moment later: show the end, not the
                // stop request (bounded: another daemon's task stops at its next renewal).
                Ok(Done::task(&self.wait(&task, STOP_SETTLE).await?))
            }
            "task_files" => {
                let args: TaskOnly = parse("task_files", args)?;
                self.files(&args.task).await
            }
            other => Err(ToolError::BadArguments {
                tool: "tools/call",
                message: format!("no tool {other:?}"),
            }),
        }
    }

    /// The task, if it exists and its agent is in scope.
    pub async fn task(&self, id: &str) -> Result<TaskRow, ToolError> {
        let task = self.runtime.store.task(id).await?;
        if !self.scope.allows(&task.agent) {
            return Err(ToolError::NoTask(id.to_owned()));
        }
        Ok(task)
    }

    async fn agent(&self, name: &str) -> Result<crate::store::AgentRow, ToolError> {
        if !self.scope.allows(name) {
            return Err(ToolError::NoAgent(name.to_owned()));
        }
        Ok(self.runtime.store.agent(name).await?)
    }

    /// The task's status now.
    pub async fn status(&self, id: &str) -> Result<TeamTask, ToolError> {
        let task = self.task(id).await?;
        let events = self.runtime.store.task_history(&task.id).await?;
        Ok(status::fold(
            Task::from(task),
            events.iter().map(|(_, body)| body),
        ))
    }

    async fn wait(&self, task: &TaskRow, timeout: Duration) -> Result<TeamTask, ToolError> {
        let waited = wait::settle(
            &self.runtime.store,
            self.context,
            self.shutdown,
            task,
            timeout,
        )
        .await?;
        let mut status = self.status(&task.id).await?;
        status.timed_out = waited == wait::Waited::TimedOut;
        Ok(status)
    }

    async fn list_agents(&self) -> Result<Done, ToolError> {
        let rows = self.runtime.store.list_agents().await?;
        let agents: Vec<TeamAgent> = rows
            .iter()
            .filter(|row| self.scope.allows(&row.name))
            .map(|row| {
                let agent = row.to_api(&self.runtime.workspaces);
                TeamAgent {
                    name: agent.name,
                    state: agent.state,
                    current_task: agent.current_task,
                    model: agent.model,
                    workspace: agent.workspace,
                    heartbeat_at_ms: agent.heartbeat_at_ms,
                }
            })
            .collect();
        let mut text = String::new();
        for agent in &agents {
            text.push_str(&format!(
                "{}: {}{}, model {}, workspace {}\n",
                agent.name,
                agent.state.as_str(),
                agent
                    .current_task
                    .as_deref()
                    .map(|t| format!(" (task {t})"))
                    .unwrap_or_default(),
                agent.model.as_deref().unwrap_or("default"),
                agent.workspace
            ));
        }
        if agents.is_empty() {
            text.push_str("no agents you may use\n");
        }
        Ok(Done::new(text, &TeamAgents { agents }))
    }

    async fn ask(&self, args: Ask) -> Result<Done, ToolError> {
        text_size("ask_agent", "job", &args.job)?;
        let wait = seconds("ask_agent", "wait_s", args.wait_s.unwrap_or(0))?;
        let agent = self.agent(&args.agent).await?;
        let task = self
            .runtime
            .create_task(&agent.name, &args.job, args.workspace.as_deref())
            .await
            .map_err(|error| match error {
                JobError::Store(error) => error.into(),
                JobError::Workspace(error) => {
                    tracing::error!(%error, "cannot create a workspace");
                    ToolError::Internal
                }
                other => ToolError::BadArguments {
                    tool: "ask_agent",
                    message: other.to_string(),
                },
            })?;
        let status = if wait.is_zero() {
            self.status(&task.id).await?
        } else {
            self.wait(&task, wait).await?
        };
        Ok(Done::task(&status))
    }

    async fn answer(&self, args: Answer) -> Result<Done, ToolError> {
        let task = self.task(&args.task).await?;
        let option = match args.option {
            None => None,
            Some(n) => Some(usize::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                ToolError::BadArguments {
                    tool: "answer_task",
                    message: format!("option must be 1 or more (got {n})"),
                }
            })?),
        };
        let answer = AnswerTask {
            text: args.text,
            option,
        };
        self.runtime.answer(&task.id, &answer).await?;
        Ok(Done::task(&self.status(&task.id).await?))
    }

    async fn decide(
        &self,
        id: &str,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<Done, ToolError> {
        let task = self.task(id).await?;
        self.runtime.decide(&task.id, decision, reason).await?;
        Ok(Done::task(&self.status(&task.id).await?))
    }

    async fn tell(&self, args: Tell) -> Result<Done, ToolError> {
        text_size("tell_agent", "text", &args.text)?;
        if args.text.trim().is_empty() {
            return Err(ToolError::BadArguments {
                tool: "tell_agent",
                message: "the text is empty".to_owned(),
            });
        }
        let agent = self.agent(&args.agent).await?;
        let delivered = self
            .runtime
            .message_agent(&agent, args.text.trim())
            .await
            .map_err(|error| match error {
                MessageError::Store(error) => error.into(),
                MessageError::Answer(error) => error.into(),
                MessageError::Workspace(error) => {
                    tracing::error!(%error, "cannot create a workspace");
                    ToolError::Internal
                }
            })?;
        let told = TeamTold {
            action: delivered.action,
            task: delivered.task.id.clone(),
        };
        let action = json!(told.action);
        let text = format!(
            "{} task {} of agent {}\n",
            action.as_str().unwrap_or_default(),
            told.task,
            agent.name
        );
        Ok(Done::new(text, &told))
    }

    async fn files(&self, id: &str) -> Result<Done, ToolError> {
        let task = self.task(id).await?;
        let files: Vec<TeamFile> = self
            .runtime
            .deliverables(&task.id)
            .await?
            .into_iter()
            .map(|d| TeamFile {
                uri: file_uri(&task.id, &d.path),
                path: d.path,
                size: d.size,
            })
            .collect();
        let mut text = String::new();
        for file in &files {
            text.push_str(&format!(
                "{} ({} bytes) {}\n",
                file.path, file.size, file.uri
            ));
        }
        if files.is_empty() {
            text.push_str("the task delivered no files\n");
        }
        let listed = TeamFiles {
            task: task.id,
            files,
        };
        let mut done = Done::new(text, &listed);
        done.links = listed.files;
        Ok(done)
    }
}

fn files_of(status: &TeamTask) -> Vec<TeamFile> {
    status
        .deliverables
        .iter()
        .map(|d| TeamFile {
            uri: file_uri(&status.task, &d.path),
            path: d.path.clone(),
            size: d.size,
        })
        .collect()
}
