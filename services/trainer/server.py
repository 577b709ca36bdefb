"""The trainer server's entry point: serve TrainerService until SIGTERM, then stop the runs."""

from __future__ import annotations

from dataclasses import dataclass

from drkernel.config import Settings
from drkernel.sections import SecuritySettings
from drkernel.serving import RunningServer, ServiceBinding, serve_until_signalled, start_server
from drkernel.v1 import trainer_pb2_grpc
from services.trainer.runs import RunManager
from services.trainer.servicer import SERVICE_NAME, TrainerServicer
from services.trainer.settings import TrainerSettings


def binding(manager: RunManager) -> ServiceBinding:
    """The TrainerService servicer over ``manager``, ready to add to a server."""
    servicer = TrainerServicer(manager)
    return ServiceBinding(
        SERVICE_NAME,
        lambda server: trainer_pb2_grpc.add_TrainerServiceServicer_to_server(servicer, server),
    )


@dataclass
class RunningTrainer:
    """A started trainer server and its run manager (for tests and embedding)."""

    server: RunningServer
    manager: RunManager

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def stop(self) -> None:
        """Stops the server, then every run (each gets its grace to checkpoint)."""
        await self.server.stop()
        await self.manager.close()


async def start_trainer(settings: TrainerSettings, security: SecuritySettings) -> RunningTrainer:
    """Takes in the runs under runs_dir and starts a server for them; returns once it serves."""
    manager = RunManager(settings)
    server = await start_server([binding(manager)], settings.server, security)
    return RunningTrainer(server, manager)


async def serve(settings: Settings) -> None:
    """Serves until SIGTERM, lets calls finish, then stops the runs: each gets SIGTERM and
    stop_grace_seconds to checkpoint, and ends STOPPED, to be resumed by the next server."""
    manager = RunManager(settings.trainer)
    await serve_until_signalled(
        [binding(manager)], settings.trainer.server, settings.security, on_stopped=manager.close
    )
