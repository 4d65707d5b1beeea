"""What the Launch dialog's Image field and ``launch --image`` say about an image id.

An empty field lets the provider pick its GPU image (``find_image``: AWS's Deep Learning
AMI, Tencent's public GPU image, Alibaba Cloud's public Ubuntu image that names a driver,
or a plain public Ubuntu one with the driver installed at first boot). An id typed there
is started as it is: gpudesk does not read it for a driver, so the window and the CLI say
so before the launch, in the same words. The one exception is an Alibaba Cloud public
plain Ubuntu image (``ubuntu_22_04_x64_20G_alibase_20240926.vhd``): ECS's console way of
installing the driver at first boot (``aliyun_gpu_driver``) applies to it as it does to
the one ``find_image`` picks, so its word is when the driver arrives. Qt-free; the window
translates the templates in the ``Launcher`` context.
"""

from __future__ import annotations

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers.aliyun_gpu_driver import is_plain_ubuntu
from gpudesk.services.core.said import Sentence

# aliyun_gpu_driver: "installed at first boot, after SSH already answers (ten minutes or
# more)" -- the console's install script fetches and builds driver, CUDA and cuDNN
DRIVER_INSTALL_MINUTES = 10

PLACEHOLDERS: dict[str, str] = {
    "aws": QT_TRANSLATE_NOOP("Launcher", "automatic: AWS Deep Learning AMI (or ami-…)"),
    "tencent": QT_TRANSLATE_NOOP("Launcher", "automatic: Tencent Cloud GPU image (or img-…)"),
    "aliyun": QT_TRANSLATE_NOOP("Launcher", "automatic: Ubuntu with a GPU driver "
                                            "(or ubuntu_…_alibase_….vhd, m-…)"),
}
TOOLTIPS: dict[str, str] = {
    "aws": QT_TRANSLATE_NOOP(
        "Launcher", "An AMI id in {region}, such as ami-0123456789abcdef0. Empty: gpudesk "
        "picks the newest AWS Deep Learning AMI, which has the NVIDIA driver."),
    "tencent": QT_TRANSLATE_NOOP(
        "Launcher", "An image id in {region}, such as img-xxxxxxxx. Empty: gpudesk picks "
        "the newest public Tencent Cloud image with a GPU driver."),
    "aliyun": QT_TRANSLATE_NOOP(
        "Launcher", "An image id in {region}: a public image such as "
        "ubuntu_22_04_x64_20G_alibase_20240926.vhd, or one of your own such as "
        "m-xxxxxxxx. Empty: gpudesk picks the newest public Ubuntu image with a GPU driver, "
        "or a plain one and installs the driver at first boot."),
}
MSG_NO_DRIVER_CHECK = QT_TRANSLATE_NOOP(
    "Launcher", "{image} is started as it is: gpudesk does not check it for a GPU driver. "
    "On an image without one (a plain Ubuntu) the GPU cannot be used until you install "
    "the NVIDIA driver; leave Image empty for {cloud}'s GPU image.")
MSG_DRIVER_AT_BOOT = QT_TRANSLATE_NOOP(
    "Launcher", "{image} is a plain Ubuntu image without a GPU driver: gpudesk installs the "
    "driver at first boot, as the console's auto-install does. It takes about {minutes} "
    "minutes or more after SSH answers; a GPU run started before then finds no driver.")
MSG_AUTOMATIC_IMAGE_FAILED = QT_TRANSLATE_NOOP(
    "Launcher", "Image: {why}")


def installs_driver(provider: str, image_id: str, keep_alive: bool = False) -> bool:
    """Whether a launch from ``image_id`` installs the GPU driver at first boot (Alibaba
    Cloud's plain public Ubuntu: one machine, and every member of a kept-alive group,
    ``aliyun_keep_alive._with_driver``)."""
    del keep_alive  # the same for both
    return provider == "aliyun" and is_plain_ubuntu(image_id)


def image_note(provider: str, image_id: str, keep_alive: bool = False
               ) -> Sentence | None:
    """The word said before a launch from a typed image (template, values); None when the
    field is empty (the provider's own GPU image)."""
    from gpudesk.services.cloud.catalog import provider_title  # noqa: PLC0415

    image = image_id.strip()
    if not image:
        return None
    values: dict[str, object] = {"image": image, "cloud": provider_title(provider),
                                 "minutes": DRIVER_INSTALL_MINUTES}
    if installs_driver(provider, image, keep_alive):
        return MSG_DRIVER_AT_BOOT, values
    return MSG_NO_DRIVER_CHECK, values
