//! `battlelog-web`: the web pages' binary (battlelog_runtime::service::main).

fn main() -> anyhow::Result<()> {
    battlelog_runtime::service::main::<battlelog_web::Config>(
        "The battlelog web pages: battles verified in the browser, for judges and forum readers.",
    )
}
