"""Sunwell's configuration: the settings model (config/settings.py), how the sources are merged and validated
(config/loading.py), and what a workspace config may add (config/narrowing.py). The names here are what the rest of
Sunwell uses."""

from sunwell.config.loading import default_data_dir, load_settings, user_config_path
from sunwell.config.settings import (
           ImageSettings,
           McpSandbox,
           McpServerConfig,
           ModelOverride,
           Price,
           RateLimits,
           Settings,
           Staging,
)
from sunwell.errors import ConfigError

__all__ = ["ConfigError", "ImageSettings", "McpSandbox", "McpServerConfig", "ModelOverride", "Price", "RateLimits", "Settings",
           "Staging", "default_data_dir", "load_settings", "user_config_path"]
