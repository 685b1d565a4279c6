"""xiaohongshu-hub scripts package"""
from .client import XhsClient
from .exceptions import (
    IpBlockedError, NeedVerifyError, SessionExpiredError,
    SignatureError, UnsupportedOperationError, XhsApiError,
)

__all__ = [
    "XhsClient", "XhsApiError", "NeedVerifyError",
    "SessionExpiredError", "IpBlockedError", "SignatureError",
    "UnsupportedOperationError",
]
