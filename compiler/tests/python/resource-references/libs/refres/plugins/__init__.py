"""A Python `@resource` whose attributes hold references, for the export tests."""

from inmanta.resources import PurgeableResource, resource


@resource("refres::Secret", agent="agent", id_attribute="name")
class Secret(PurgeableResource):
    fields = ("name", "token", "settings", "hosts", "derived")

    @staticmethod
    def get_derived(_, entity):
        # a getter that hands the model's reference on, inside a dict
        return {"from_getter": entity.token}
