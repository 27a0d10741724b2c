"""The push-config methods (spec 3.1.7-3.1.10) and the config sent inline with SendMessage.

Configs are validated before they are stored, and answers never carry their secrets (spec
13.2). Creation refuses only the webhook addresses the address guard is certain to refuse; the
guard's check at delivery decides the rest. The rules: docs/server.md ("Methods", "Push
configs").
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from typing import Any

import aiohttp
import yarl

from a2a_wire import netguard
from a2a_wire._protocol.ids import new_uuid
from a2a_wire.errors import FieldViolation, InvalidParamsError, TaskNotFoundError
from a2a_wire.methods import LIST_TASK_PUSH_NOTIFICATION_CONFIGS
from a2a_wire.server._call import MethodCall
from a2a_wire.server.push._settings import PushSettings
from a2a_wire.server.store import page_scope, page_size
from a2a_wire.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    Empty,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

__all__ = [
    "check_config",
    "create_push_config",
    "delete_push_config",
    "get_push_config",
    "inline_push_config",
    "list_push_configs",
    "without_secrets",
]

log = logging.getLogger("a2a_wire.server")

MAX_URL_LENGTH = 2048
MAX_ID_LENGTH = 256
MAX_SECRET_LENGTH = 4096
_SCHEME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
_HEADER_TEXT = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")  # visible ASCII
_INLINE = "configuration.taskPushNotificationConfig."
_LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


async def check_config(
    config: TaskPushNotificationConfig, settings: PushSettings, prefix: str = ""
) -> None:
    """Validate a config before it is stored (docs/server.md, "Methods").

    Args:
        config: The config as received.
        settings: The server's push settings (schemes, address allowlist, resolver).
        prefix: Path of the config in the request, for the violations' field names.

    Raises:
        InvalidParamsError: one violation per bad field.
    """
    violations: list[FieldViolation] = []
    if len(config.id) > MAX_ID_LENGTH:
        violations.append((prefix + "id", f"longer than {MAX_ID_LENGTH} characters"))
    if config.token and not _header_safe(config.token):
        violations.append((prefix + "token", "must be visible ASCII (it is sent in a header)"))
    auth = config.authentication
    if auth is not None:
        if not _SCHEME.fullmatch(auth.scheme):
            violations.append((prefix + "authentication.scheme", "must be an HTTP auth scheme"))
        if auth.credentials and not _header_safe(auth.credentials):
            where = prefix + "authentication.credentials"
            violations.append((where, "must be visible ASCII (it is sent in a header)"))
    problem = await _url_problem(config.url, settings)
    if problem is not None:
        violations.append((prefix + "url", problem))
    if violations:
        text = "; ".join(f"{field}: {why}" for field, why in violations)
        raise InvalidParamsError(f"Invalid push notification config: {text}", violations=violations)


def _header_safe(value: str) -> bool:
    return len(value) <= MAX_SECRET_LENGTH and _HEADER_TEXT.fullmatch(value) is not None


async def _url_problem(url: str, settings: PushSettings) -> str | None:
    """Why ``url`` cannot be a webhook, or ``None``; resolves its host name."""
    if len(url) > MAX_URL_LENGTH:
        return f"longer than {MAX_URL_LENGTH} characters"
    try:
        parsed = yarl.URL(url)
    except ValueError:
        return "not a valid URL"
    if not parsed.absolute or parsed.scheme not in settings.schemes:
        return f"must be an absolute {' or '.join(sorted(settings.schemes))} URL"
    if parsed.raw_user or parsed.raw_password:
        return "must not contain user information"
    try:
        netguard.check_url(parsed, settings.allowlist)
    except netguard.ForbiddenAddressError as exc:
        return f"the address is not allowed ({exc.reason})"
    except netguard.AddressGuardError:
        return "the host is not a valid name or canonical IP address"
    host = parsed.raw_host or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if _loopback_name(host) and not any(
            settings.allowlist.allows(host, ip) for ip in _LOOPBACK
        ):
            return "the host name is loopback by definition (RFC 6761)"
        return await _resolved_problem(host, parsed.port or 0, settings)
    return None  # an IP literal, judged by check_url


def _loopback_name(host: str) -> bool:
    name = host.lower().removesuffix(".")
    return name == "localhost" or name.endswith(".localhost")


async def _resolved_problem(host: str, port: int, settings: PushSettings) -> str | None:
    """Why the current DNS answer for ``host`` is refused; ``None`` also when there is none."""
    resolver = settings.resolver or aiohttp.ThreadedResolver()
    try:
        async with asyncio.timeout(settings.timeout_seconds):
            answers = await resolver.resolve(host, port, socket.AF_UNSPEC)
    except (OSError, TimeoutError) as exc:
        log.info(
            "push webhook host %r does not resolve now (%s); accepted, the address guard "
            "decides when a notification is delivered",
            host[:253],
            type(exc).__name__,
        )
        return None
    finally:
        if settings.resolver is None:
            await resolver.close()
    for answer in answers:
        try:
            settings.allowlist.check(host, answer["host"])
        except netguard.ForbiddenAddressError as exc:
            return f"the host name resolves to an address that is not allowed ({exc.reason})"
    return None


def without_secrets(config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """The config as an answer shows it: a copy without ``token`` and ``credentials``.

    Args:
        config: The stored config (left unchanged; deliveries use it).

    Returns:
        A new config with the same ids, URL and authentication scheme.
    """
    auth = config.authentication
    return TaskPushNotificationConfig(
        tenant=config.tenant,
        id=config.id,
        task_id=config.task_id,
        url=config.url,
        authentication=AuthenticationInfo(scheme=auth.scheme) if auth is not None else None,
    )


async def _check_task(call: MethodCall[Any], task_id: str) -> None:
    if not task_id:
        raise InvalidParamsError("taskId is required", violations=[("taskId", "required")])
    if await call.store.get(task_id, owner=call.info.owner) is None:
        raise TaskNotFoundError(f"Task not found: {task_id!r}", metadata={"taskId": task_id})


async def _store(call: MethodCall[Any], config: TaskPushNotificationConfig) -> None:
    """Give the config an id if it has none, and store it within the per-task limit."""
    config.id = config.id or new_uuid()
    limit = call.settings.push.max_configs_per_task
    if not await call.store.put_push_config(config, limit=limit):  # atomic, across processes
        raise InvalidParamsError(
            f"Task {config.task_id} has {limit} push notification configs; delete one first",
            violations=[("taskId", f"at most {limit} push notification configs per task")],
        )


async def create_push_config(
    call: MethodCall[TaskPushNotificationConfig],
) -> TaskPushNotificationConfig:
    """CreateTaskPushNotificationConfig (spec 3.1.7): the stored config, with its ``id``."""
    request = call.request
    await _check_task(call, request.task_id)
    await check_config(request, call.settings.push)
    await _store(call, request)
    return without_secrets(request)


async def get_push_config(
    call: MethodCall[GetTaskPushNotificationConfigRequest],
) -> TaskPushNotificationConfig:
    """GetTaskPushNotificationConfig (spec 3.1.8); a missing config is -32001."""
    request = call.request
    await _check_task(call, request.task_id)
    config = await call.store.get_push_config(request.task_id, request.id)
    if config is None:
        raise TaskNotFoundError(
            f"Push notification config not found: {request.id[:100]!r}",
            metadata={"taskId": request.task_id, "configId": request.id[:MAX_ID_LENGTH]},
        )
    return without_secrets(config)


async def list_push_configs(
    call: MethodCall[ListTaskPushNotificationConfigsRequest],
) -> ListTaskPushNotificationConfigsResponse:
    """ListTaskPushNotificationConfigs (spec 3.1.9), in creation order, paged."""
    request = call.request
    await _check_task(call, request.task_id)
    size = page_size(request.page_size or None)  # no presence: 0 is "none named"
    tokens = call.store.page_tokens
    bound = page_scope(LIST_TASK_PUSH_NOTIFICATION_CONFIGS, call.info.owner, request.task_id)
    after = int(tokens.read(request.page_token, bound)[0]) if request.page_token else -1
    rest = [item for item in await call.store.list_push_configs(request.task_id) if item[0] > after]
    page = rest[:size]
    token = tokens.issue((page[-1][0],), bound) if len(rest) > size else ""
    return ListTaskPushNotificationConfigsResponse(
        configs=[without_secrets(config) for _, config in page], next_page_token=token
    )


async def delete_push_config(call: MethodCall[DeleteTaskPushNotificationConfigRequest]) -> Empty:
    """DeleteTaskPushNotificationConfig (spec 3.1.10): ``{}``, also for a missing config."""
    request = call.request
    await _check_task(call, request.task_id)
    await call.store.delete_push_config(request.task_id, request.id)
    return Empty()


async def inline_push_config(
    call: MethodCall[SendMessageRequest],
) -> TaskPushNotificationConfig | None:
    """Validate SendMessage's inline config; store it now for a follow-up message.

    Returns:
        The config (with an ``id``) to store with the task the message creates, or ``None``
        when there is none, or when it was stored already on the message's task.

    Raises:
        InvalidParamsError: the config is invalid, or names another task.
        TaskNotFoundError: the message's task is not visible to the caller.
    """
    request = call.request
    configuration = request.configuration
    config = configuration.task_push_notification_config if configuration else None
    if config is None:
        return None
    message = request.message
    assert message is not None  # REQUIRED, checked when the params were decoded
    if config.task_id and config.task_id != message.task_id:
        raise InvalidParamsError(
            "The inline push notification config names another task",
            violations=[(_INLINE + "taskId", "must be empty or equal to message.taskId")],
        )
    await check_config(config, call.settings.push, _INLINE)
    config.id = config.id or new_uuid()
    if not message.task_id:
        return config
    await _check_task(call, message.task_id)
    config.task_id = message.task_id
    await _store(call, config)
    return None
