"""``a2a-wire push {set,get,list,delete}`` and ``a2a-wire webhook``.

The ``push`` commands call the four push-config operations (spec 3.1.7-3.1.10). ``webhook``
runs a :class:`~a2a_wire.client.PushReceiver` on a local port and prints every event an agent
POSTs to it, checking the notification token and ``Authorization`` when given; it stops on
SIGINT/SIGTERM, or after ``--count`` events.
"""

from __future__ import annotations

import asyncio
import signal

import click
from aiohttp import web

from a2a_wire.cli._common import ClientOptions, client_command, client_options
from a2a_wire.cli._output import Printer, count
from a2a_wire.client import PushReceiver, create_receiver_app
from a2a_wire.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    StreamResponse,
    TaskPushNotificationConfig,
)

__all__ = ["push", "webhook"]

_TOKEN_VARIABLE = "A2A_WIRE_NOTIFICATION_TOKEN"


def _authentication(scheme: str | None, credentials: str | None) -> AuthenticationInfo | None:
    if not scheme and not credentials:
        return None
    if not scheme or not credentials:
        raise click.UsageError("--auth-scheme and --auth-credentials go together")
    return AuthenticationInfo(scheme=scheme, credentials=credentials)


@click.group()
def push() -> None:
    """Manage the push notification configs of a task."""


@push.command("set")
@click.argument("url")
@click.argument("task_id")
@click.argument("webhook_url")
@click.option("--config-id", default="", help="The config's id (the agent makes one if empty).")
@click.option(
    "--notification-token",
    envvar=_TOKEN_VARIABLE,
    default="",
    help=f"Token the agent sends with each notification (or ${_TOKEN_VARIABLE}).",
)
@click.option("--auth-scheme", help="Authorization scheme the agent uses, e.g. Bearer.")
@click.option("--auth-credentials", help="Credentials the agent sends with that scheme.")
@client_options
@client_command
async def push_set(
    url: str,
    task_id: str,
    webhook_url: str,
    config_id: str,
    notification_token: str,
    auth_scheme: str | None,
    auth_credentials: str | None,
    opts: ClientOptions,
) -> int:
    """Ask the agent at URL to POST the events of TASK_ID to WEBHOOK_URL."""
    config = TaskPushNotificationConfig(
        id=config_id,
        task_id=task_id,
        url=webhook_url,
        token=notification_token,
        authentication=_authentication(auth_scheme, auth_credentials),
    )
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        stored = await client.create_task_push_notification_config(config)
    printer.push_config(stored)
    return 0


@push.command("get")
@click.argument("url")
@click.argument("task_id")
@click.argument("config_id")
@client_options
@client_command
async def push_get(url: str, task_id: str, config_id: str, opts: ClientOptions) -> int:
    """Show the push config CONFIG_ID of TASK_ID."""
    printer = Printer(opts.json)
    request = GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
    async with await opts.connect(url) as client:
        config = await client.get_task_push_notification_config(request)
    printer.push_config(config)
    return 0


@push.command("list")
@click.argument("url")
@click.argument("task_id")
@click.option("--page-size", type=click.IntRange(min=1), default=None, help="Configs per page.")
@click.option("--page-token", default="", help="The page to show.")
@client_options
@client_command
async def push_list(
    url: str, task_id: str, page_size: int | None, page_token: str, opts: ClientOptions
) -> int:
    """List the push configs of TASK_ID."""
    printer = Printer(opts.json)
    request = ListTaskPushNotificationConfigsRequest(
        task_id=task_id, page_size=page_size or 0, page_token=page_token
    )
    async with await opts.connect(url) as client:
        page = await client.list_task_push_notification_configs(request)
    if opts.json:
        printer.value(page)
        return 0
    for config in page.configs:
        printer.push_config(config)
    tail = f"; next page: --page-token {page.next_page_token}" if page.next_page_token else ""
    click.echo(f"{count(len(page.configs), 'config')}{tail}")
    return 0


@push.command("delete")
@click.argument("url")
@click.argument("task_id")
@click.argument("config_id")
@client_options
@client_command
async def push_delete(url: str, task_id: str, config_id: str, opts: ClientOptions) -> int:
    """Delete the push config CONFIG_ID of TASK_ID."""
    request = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
    async with await opts.connect(url) as client:
        await client.delete_task_push_notification_config(request)
    if opts.json:
        Printer(True).value({})
    else:
        click.echo(f"deleted push config {config_id}")
    return 0


async def _receive(
    receiver: PushReceiver, host: str, port: int, path: str, done: asyncio.Event
) -> None:
    runner = web.AppRunner(
        create_receiver_app(receiver, path), access_log=None, handle_signals=False
    )
    await runner.setup()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, done.set)
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        for address in runner.addresses:
            if isinstance(address, tuple):
                click.echo(f"listening on http://{address[0]}:{address[1]}{path}", err=True)
                break
        await done.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await runner.cleanup()


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True)
@click.option("--path", default="/webhook", show_default=True, help="The webhook's path.")
@click.option("--notification-token", envvar=_TOKEN_VARIABLE, default="", help="Token to require.")
@click.option("--auth-scheme", help="Authorization scheme to require.")
@click.option("--auth-credentials", help="Credentials to require with that scheme.")
@click.option("--task-id", "task_ids", multiple=True, help="Accept only these tasks (repeatable).")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many events.")
@click.option("--json", "json_output", is_flag=True, help="ProtoJSON output, one event per line.")
def webhook(
    host: str,
    port: int,
    path: str,
    notification_token: str,
    auth_scheme: str | None,
    auth_credentials: str | None,
    task_ids: tuple[str, ...],
    count: int | None,
    json_output: bool,
) -> None:
    """Receive push notifications on a local port and print each event.

    A redelivery (an ``X-A2A-Delivery-Id`` seen before) is printed once; a POST without the
    header is always printed, however like an earlier one it is.
    """
    if not path.startswith("/"):
        raise click.BadParameter("must start with '/'", param_hint="--path")
    printer = Printer(json_output)
    authentication = _authentication(auth_scheme, auth_credentials)

    async def main() -> None:
        done = asyncio.Event()
        seen = 0

        async def on_event(event: StreamResponse) -> None:
            nonlocal seen
            printer.event(event)
            seen += 1
            if count is not None and seen >= count:
                done.set()

        receiver = PushReceiver(
            on_event,
            token=notification_token,
            authentication=authentication,
            expected_task_ids=task_ids or None,
        )
        await _receive(receiver, host, port, path, done)

    try:
        asyncio.run(main())
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
