"""flinkish web's services for the programs sent to it (only with ``web.submit.enable``),
out of the job client the CLI uses: an upload kept privately, its run on the session
cluster, ``flinkish upgrade`` carried out here with it, old uploads swept, and the warm
runner submitted programs start in (:mod:`flinkish_cli.submission.upload`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from flinkish_cli.client.jobs import JobClient
from flinkish_cli.client.upgrade.machine import Launching, Upgrade
from flinkish_cli.client.upgrade.outcome import UpgradeRequest
from flinkish_cli.errors import JobError
from flinkish_cli.registry.jobid import parse_job_id

if TYPE_CHECKING:
    from flinkish_cli.client.upgrade.outcome import UpgradePresenter
    from flinkish_cli.submission.warm_runner import WarmRunner


class Uploads:
    """The upload services of one ``flinkish web``, over its job client's registry."""

    def __init__(self, client: JobClient) -> None:
        self.client = client
        #: the warm runner submitted programs start in (:meth:`keep_warm_runner`)
        self.warm: WarmRunner | None = None

    def upload_program(self, archive: bytes, upload_dir: str) -> str:
        """Keep an uploaded program's zip under ``upload_dir``, unpacked within its bounds
        (:func:`~flinkish_cli.submission.upload.unpack`); its id."""
        from flinkish_cli.submission.upload import unpack

        return unpack(archive, Path(upload_dir).expanduser())

    def sweep_uploads(self, upload_dir: str, max_age: float) -> int:
        """Remove the uploads never run for ``max_age`` seconds, and those
        whose job has ended (or is not in this registry); how many."""
        from flinkish_cli.submission.upload import sweep

        def ended(job_id: str) -> bool:
            status = self.client.registry.find(parse_job_id(job_id))
            return status is None or status.effective_state().is_terminal

        return sweep(Path(upload_dir).expanduser(), max_age, ended)

    def keep_warm_runner(self) -> None:
        """Keep a warm runner that uploaded programs start in (one spare job process started
        ahead; :mod:`flinkish_cli.submission.warm_runner`) until :meth:`close`."""
        from flinkish_cli.submission.upload import warm_runner

        if self.warm is None:
            self.warm = warm_runner()

    def close(self) -> None:
        """Stop what these services keep running (the warm runner's spare)."""
        warm, self.warm = self.warm, None
        if warm is not None:
            warm.close()

    def run_upload(self, upload_dir: str, upload_id: str, body: Any, session_cluster: str) -> str:
        """Start an uploaded program on the session cluster, with the
        configuration its run request carries (:mod:`flinkish_cli.submission.upload`); its
        JobID."""
        from flinkish_cli.submission import upload

        run = upload.UploadedRun.from_json(body)
        found = upload.upload_dir(Path(upload_dir).expanduser(), upload_id)
        job_id = upload.start_uploaded(found, run, session_cluster, self.warm)
        upload.mark_run(found, job_id)  # removed once the job has ended
        return job_id

    def upgrade(
        self,
        upload_dir: str,
        upload_id: str,
        body: Any,
        session_cluster: str,
        presenter: UpgradePresenter,
    ) -> Upgrade:
        """An upgrade whose new program was uploaded, checked as a request and ready to
        :meth:`~flinkish_cli.client.upgrade.machine.Upgrade.run`: with the configuration its request
        carries (never the server's), acting on the registry of the server's job client
        only, its programs started as submitted ones are (their own environment, the warm
        runner). What the user sees goes through ``presenter``."""
        from flinkish_cli.config.model import Configuration
        from flinkish_cli.registry.store import registry_identity
        from flinkish_cli.submission import upload

        found = upload.upload_dir(Path(upload_dir).expanduser(), upload_id)
        run = upload.UploadedRun.from_json(body.get("run") if isinstance(body, dict) else None)
        request = UpgradeRequest.from_json(body, upload.run_request(found, run, session_cluster))
        config = Configuration.from_flat(run.configuration)
        config = config.with_overrides(request.program.config_flags())
        ours, theirs = self.client.identity(), registry_identity(config)
        if theirs.id != ours.id:
            raise JobError(
                f"This flinkish web serves the registry {ours.location}, not the upgrade's "
                f"{theirs.location} (execution.checkpointing.dir).",
                "Send the upgrade to the flinkish web of its registry.",
            )
        launching = Launching(upload.job_environment(), self.warm, run.origin)
        return Upgrade(JobClient(config), request, presenter, launching)
