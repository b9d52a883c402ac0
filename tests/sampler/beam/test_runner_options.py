"""sampler.beam.runner's pipeline options: one view per options class, values shared."""
import copy
import pickle

from apache_beam.options.pipeline_options import StandardOptions, TypeOptions

from sampler.beam.runner import make_pipeline


def test_pipeline_options_make_each_view_once_and_share_their_values():
    options = make_pipeline(["--runner", "DirectRunner"])._options
    view = options.view_as(TypeOptions)
    assert options.view_as(TypeOptions) is view and view.pipeline_type_check is False
    view.pipeline_type_check = True  # a view writes the options' one set of values
    assert options.view_as(TypeOptions).pipeline_type_check is True
    assert options.get_all_options()["pipeline_type_check"] is True
    copied = copy.deepcopy(options)  # as beam.Pipeline copies them
    copied.view_as(TypeOptions).pipeline_type_check = False
    assert options.view_as(TypeOptions).pipeline_type_check is True
    assert copied.get_all_options()["pipeline_type_check"] is False
    restored = pickle.loads(pickle.dumps(options))
    assert "_views" not in pickle.loads(pickle.dumps(options)).__dict__
    assert restored.view_as(StandardOptions).runner == "DirectRunner"
